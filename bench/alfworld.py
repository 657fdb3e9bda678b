"""ALFWorld: game generation, the planner expert on 300 games, a random agent, env latency and
the throughput of parallel worker processes.

Run ``python bench/alfworld.py`` (``--help`` for the counts). Sections:

* generation: time and size per generated game (sample + write ``game.tw-pddl`` and
  ``traj_data.json``), against a ``json.dumps`` of the same content as the peer;
* expert: :meth:`ALFWorldEnv.expert_action` on ``--expert-games`` games spread evenly over the
  three splits (indices ``0..n/3-1`` of each, so the six task types alternate); success per task
  type and split, plan lengths, and every failure with its last observation;
* random: a seeded uniformly-random admissible-command agent on the same kind of games
  (50 steps), to show the tasks are not trivial;
* latency: reset (TextWorld load of a new game, and of the same game again) and step times,
  median and p95 (wall and CPU), with the number of receptacles and objects of the games;
* throughput: env steps per second of one env in one process against ``--workers`` envs in
  as many worker processes, each running random-agent episodes.

Games are generated into ``--cache`` (default: a fresh temporary folder, so generation is
included where the first reset of a game pays for it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# This script shares its name with the ``alfworld`` package: keep its folder off the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from arlarena_envs.alfworld.env import ALFWorldEnv  # noqa: E402
from arlarena_envs.alfworld.generator import TASK_TYPES, sample_game  # noqa: E402
from arlarena_envs.alfworld.policies import (  # noqa: E402
    EpisodeResult,
    expert_policy,
    play,
    random_admissible_policy,
)
from arlarena_envs.alfworld.problem import game_data, traj_data, write_game  # noqa: E402
from arlarena_envs.alfworld.scenes import SPLITS  # noqa: E402

_ENV: ALFWorldEnv | None = None


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _worker_env(cache: str) -> ALFWorldEnv:
    global _ENV
    if _ENV is None:
        _ENV = ALFWorldEnv(cache_dir=cache)
    return _ENV


def _episode(job: tuple[str, str, int, str]) -> EpisodeResult:
    kind, split, index, cache = job
    env = _worker_env(cache)
    policy = expert_policy if kind == "expert" else random_admissible_policy(index)
    return play(env, policy, options={"split": split, "index": index})


def _run(kind: str, games: int, workers: int, cache: str) -> list[EpisodeResult]:
    per_split = max(1, games // len(SPLITS))
    jobs = [(kind, split, i, cache) for split in SPLITS for i in range(per_split)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_episode, jobs))


def bench_generation(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        specs = [sample_game(SPLITS[i % 3], i) for i in range(n)]
        sample_s = (time.perf_counter() - start) / n
        start = time.perf_counter()
        paths = [write_game(spec, Path(tmp)) for spec in specs]
        write_s = (time.perf_counter() - start) / n
        start = time.perf_counter()
        for spec in specs:
            json.dumps(game_data(spec)), json.dumps(traj_data(spec))
        dump_s = (time.perf_counter() - start) / n
        sizes = [p.stat().st_size + (p.parent / "traj_data.json").stat().st_size for p in paths]
    print(f"\n## Generation ({n} games)")
    print("| step | ms / game |\n|---|---|")
    print(f"| sample the game (scene, task, placements) | {1000 * sample_s:.2f} |")
    print(f"| render + write game.tw-pddl and traj_data.json | {1000 * write_s:.2f} |")
    print(f"| peer: json.dumps of the same content | {1000 * dump_s:.2f} |")
    print(f"| total (sample + write) | {1000 * (sample_s + write_s):.2f} |")
    print(f"size per game: mean {statistics.mean(sizes) / 1024:.1f} KiB, "
          f"max {max(sizes) / 1024:.1f} KiB")


def _success_table(title: str, results: list[EpisodeResult]) -> None:
    wins: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in results:
        wins[(r.task_type, r.split)].append(r.won)
    print(f"\n## {title}: {sum(r.won for r in results)}/{len(results)} solved "
          f"({100 * sum(r.won for r in results) / len(results):.1f} %)")
    print("| task type | " + " | ".join(SPLITS) + " | all |")
    print("|---|" + "---|" * (len(SPLITS) + 1))
    for task_type in TASK_TYPES:
        cells = []
        for split in SPLITS:
            won = wins.get((task_type, split), [])
            cells.append(f"{sum(won)}/{len(won)}" if won else "-")
        total = [w for (t, _), ws in wins.items() if t == task_type for w in ws]
        cells.append(f"{sum(total)}/{len(total)} ({100 * sum(total) / max(1, len(total)):.0f} %)")
        print(f"| {task_type} | " + " | ".join(cells) + " |")


def bench_expert(games: int, workers: int, cache: str) -> None:
    start = time.perf_counter()
    results = _run("expert", games, workers, cache)
    elapsed = time.perf_counter() - start
    _success_table("Expert (planner)", results)
    lengths = Counter(r.steps for r in results if r.won)
    print(f"plan lengths of solved games: {dict(sorted(lengths.items()))}; "
          f"wall time {elapsed:.0f} s with {workers} worker(s)")
    for r in results:
        if not r.won:
            print(f"FAILED {r.split}[{r.index}] {r.task_type} after {r.steps} steps: "
                  f"{r.gamefile}\n  last observation: {r.last_observation}")


def bench_random(games: int, workers: int, cache: str) -> None:
    results = _run("random", games, workers, cache)
    _success_table("Random admissible agent (50 steps)", results)


def bench_latency(games: int, cache: str) -> None:
    env = ALFWorldEnv(cache_dir=cache)
    timings: dict[str, list[float]] = defaultdict(list)
    receptacles, objects = [], []
    for i in range(games):
        result = play(env, random_admissible_policy(i), options={"split": "train", "index": i},
                      max_steps=20)
        timings["reset"].append(result.reset_seconds)
        timings["reset cpu"].append(result.reset_cpu_seconds)
        timings["step"] += result.step_seconds
        timings["step cpu"] += result.step_cpu_seconds
        start, cpu = time.perf_counter(), time.process_time()
        env.reset(options={"split": "train", "index": i})
        timings["reset again"].append(time.perf_counter() - start)
        timings["reset again cpu"].append(time.process_time() - cpu)
        problem = json.loads(Path(result.gamefile).read_text())["pddl_problem"]
        receptacles.append(problem.count(" - receptacle"))
        objects.append(sum(" - object" in line and "_bar_" in line
                           for line in problem.splitlines()))
    env.close()
    print(f"\n## Latency ({games} train games, one env, 20 random steps each)")
    print("| call | wall median (ms) | wall p95 (ms) | CPU median (ms) | CPU p95 (ms) | n |")
    print("|---|---|---|---|---|---|")
    labels = {"reset": "reset, new game (generate if needed, load, reset)",
              "reset again": "reset, same game again", "step": "step"}
    for name, label in labels.items():
        wall, cpu = timings[name], timings[f"{name} cpu"]
        print(f"| {label} | {1000 * statistics.median(wall):.0f} | "
              f"{1000 * _quantile(wall, 0.95):.0f} | {1000 * statistics.median(cpu):.0f} | "
              f"{1000 * _quantile(cpu, 0.95):.0f} | {len(wall)} |")
    print(f"receptacles per game: median {statistics.median(receptacles):.0f} "
          f"(min {min(receptacles)}, max {max(receptacles)}); objects per game: median "
          f"{statistics.median(objects):.0f} (min {min(objects)}, max {max(objects)})")


def _throughput_worker(job: tuple[int, float, str]) -> tuple[int, float, float]:
    worker, seconds, cache = job
    env = ALFWorldEnv(cache_dir=cache)
    steps, episode = 0, 0
    start, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        result = play(env, random_admissible_policy(worker * 1000 + episode),
                      options={"split": "train", "index": (worker * 37 + episode) % 3553},
                      max_steps=20)
        steps += result.steps
        episode += 1
    env.close()
    return steps, time.perf_counter() - start, time.process_time() - cpu


def bench_throughput(workers: int, seconds: float, cache: str) -> None:
    rows = []
    for n in (1, workers) if workers > 1 else (1,):
        start = time.perf_counter()
        with ProcessPoolExecutor(max_workers=n) as pool:
            out = list(pool.map(_throughput_worker, [(w, seconds, cache) for w in range(n)]))
        wall = time.perf_counter() - start
        rows.append((n, sum(s for s, _, _ in out), wall, sum(c for _, _, c in out)))
    base = rows[0][1] / rows[0][2]
    print(f"\n## Throughput (random-agent episodes of 20 steps incl. resets, ~{seconds:.0f} s; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end)")
    print("| envs (processes) | steps | wall (s) | steps / s | vs one env | steps / CPU-s |")
    print("|---|---|---|---|---|---|")
    for n, steps, wall, cpu in rows:
        print(f"| {n} | {steps} | {wall:.1f} | {steps / wall:.2f} | {steps / wall / base:.2f}x | "
              f"{steps / cpu:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generation-games", type=int, default=300)
    parser.add_argument("--expert-games", type=int, default=300)
    parser.add_argument("--random-games", type=int, default=60)
    parser.add_argument("--latency-games", type=int, default=12)
    parser.add_argument("--throughput-seconds", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache", default=None, help="game cache (default: a temporary folder)")
    parser.add_argument("--only", nargs="*", default=None,
                        choices=["generation", "expert", "random", "latency", "throughput"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or tmp
        wanted = set(args.only or ["generation", "expert", "random", "latency", "throughput"])
        if "generation" in wanted:
            bench_generation(args.generation_games)
        if "latency" in wanted:
            bench_latency(args.latency_games, cache)
        if "expert" in wanted:
            bench_expert(args.expert_games, args.workers, cache)
        if "random" in wanted:
            bench_random(args.random_games, args.workers, cache)
        if "throughput" in wanted:
            bench_throughput(args.workers, args.throughput_seconds, cache)


if __name__ == "__main__":
    main()
