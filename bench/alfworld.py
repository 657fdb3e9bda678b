"""ALFWorld: the native engine against TextWorld in the same run, game generation and the experts.

Run ``python bench/alfworld.py`` (``--help`` for the counts; ``--only`` picks sections).
Sections:

* generation: time and size per generated game (sample + write ``game.tw-pddl`` and
  ``traj_data.json``), against a ``json.dumps`` of the same content as the peer;
* latency: reset and step times of the native engine and of TextWorld on the same games and
  the same commands (a seeded random admissible agent): a new game, the same game again, a
  game already compiled, and the steps (median and p95, wall and CPU); ratios TextWorld/native;
* throughput: env steps per second with ``--workers`` worker processes, each running
  random-agent episodes on its own env, native against TextWorld;
* soak: the differential test at scale: ``--soak-games`` games over all splits, each played
  by both engines with random admissible commands then ALFWorld's planner expert, every step
  compared (observation, admissible commands, reward, done, won, propositions); a mismatch is
  printed with the game and the step. ``--record FILE`` writes TextWorld's transcripts (digests
  and command indices) for ``tests/test_alfworld_native.py``;
* checked: ALFWorld's hand-coded expert on the games of every split (success per task type,
  re-drawn games, steps); ``--write-checked`` stores the verdicts the generator ships;
* expert: the planner expert on ``--expert-games`` games over the three splits;
* random: a seeded random admissible-command agent on the same kind of games (50 steps).

Games are generated into ``--cache`` (default: a fresh temporary folder).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# This script shares its name with the ``alfworld`` package: keep its folder off the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from arlarena_envs.alfworld.differential import compare_engines  # noqa: E402
from arlarena_envs.alfworld.engines import make_engine  # noqa: E402
from arlarena_envs.alfworld.env import ALFWorldEnv  # noqa: E402
from arlarena_envs.alfworld.generator import (  # noqa: E402
    GENERATOR_VERSION,
    SPLIT_SIZES,
    TASK_TYPES,
    candidate_games,
    generated_game_path,
    handcoded_seed,
    sample_game,
    split_task_types,
)
from arlarena_envs.alfworld.handcoded import MAX_EXPERT_STEPS, play_handcoded  # noqa: E402
from arlarena_envs.alfworld.policies import (  # noqa: E402
    EpisodeResult,
    expert_policy,
    random_admissible_policy,
    run_policy,
)
from arlarena_envs.alfworld.problem import game_data, traj_data, write_game  # noqa: E402
from arlarena_envs.alfworld.scenes import SPLITS  # noqa: E402

CHECKED_FILE = Path(__file__).resolve().parents[1] / "arlarena_envs" / "alfworld" / "data" / \
    "handcoded_checked.json"

_ENV: ALFWorldEnv | None = None


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _spread(n: int) -> list[tuple[str, int]]:
    """``n // 3`` games of each split, evenly spaced over it (so every task type shows)."""
    games = []
    for split in SPLITS:
        size = SPLIT_SIZES[split]
        take = min(size, max(1, n // len(SPLITS)))
        games += [(split, i * size // take) for i in range(take)]
    return games


def _map(fn, jobs, workers: int) -> list:
    if workers <= 1:
        return [fn(job) for job in jobs]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, jobs, chunksize=4))


# -- generation ---------------------------------------------------------------------------------
def bench_generation(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        specs = [sample_game(split, i) for split, i in _spread(n)]
        sample_s = (time.perf_counter() - start) / len(specs)
        start = time.perf_counter()
        paths = [write_game(spec, Path(tmp)) for spec in specs]
        write_s = (time.perf_counter() - start) / len(specs)
        start = time.perf_counter()
        for spec in specs:
            json.dumps(game_data(spec)), json.dumps(traj_data(spec))
        dump_s = (time.perf_counter() - start) / len(specs)
        sizes = [p.stat().st_size + (p.parent / "traj_data.json").stat().st_size for p in paths]
    print(f"\n## Generation ({len(specs)} games)")
    print("| step | ms / game |\n|---|---|")
    print(f"| sample the game (scene, task, placements; expert verdicts shipped) | "
          f"{1000 * sample_s:.2f} |")
    print(f"| render + write game.tw-pddl and traj_data.json | {1000 * write_s:.2f} |")
    print(f"| peer: json.dumps of the same content | {1000 * dump_s:.2f} |")
    print(f"size per game: mean {statistics.mean(sizes) / 1024:.1f} KiB, "
          f"max {max(sizes) / 1024:.1f} KiB")


# -- latency ------------------------------------------------------------------------------------
def _timed(fn, *args):
    start, cpu = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - start, time.process_time() - cpu


def _load_and_reset(engine, path: Path):
    engine.load(path)
    return engine.reset()


def _latency_run(name: str, paths: list[Path], steps: int) -> dict[str, list[float]]:
    """Reset and step times of engine ``name``: every game new to the engine, then again."""
    engine = make_engine(name)
    times: dict[str, list[float]] = defaultdict(list)
    for i, path in enumerate(paths):
        rng = random.Random(i)
        _, wall, cpu = _timed(_load_and_reset, engine, path)
        times["reset new"].append(wall)
        times["reset new cpu"].append(cpu)
        turn = engine.reset()
        for _ in range(steps):
            command = rng.choice(turn.admissible_commands)
            turn, wall, cpu = _timed(engine.step, command)
            times["step"].append(wall)
            times["step cpu"].append(cpu)
            if turn.won:
                break
        _, wall, cpu = _timed(engine.reset)
        times["reset same"].append(wall)
        times["reset same cpu"].append(cpu)
    if name == "native":  # a game compiled before, in a fresh engine (another env)
        for path in paths:
            _, wall, cpu = _timed(_load_and_reset, make_engine(name), path)
            times["reset known"].append(wall)
            times["reset known cpu"].append(cpu)
    engine.close()
    return times


def bench_latency(games: int, steps: int, cache: str) -> None:
    paths = [generated_game_path("train", i, Path(cache) / "train") for i in range(games)]
    runs = {name: _latency_run(name, paths, steps) for name in ("textworld", "native")}
    print(f"\n## Latency ({games} train games, up to {steps} random steps each, same commands "
          "on both engines)")
    print("| call | TextWorld wall p50 / p95 (ms) | native wall p50 / p95 (ms) | "
          "TextWorld CPU p50 (ms) | native CPU p50 (ms) | TextWorld / native (CPU p50) |")
    print("|---|---|---|---|---|---|")
    labels = {"reset new": "reset, a game new to the process (load + reset)",
              "reset known": "reset, a game compiled before, in a fresh env",
              "reset same": "reset, the same game again", "step": "step"}
    for key, label in labels.items():
        cells = []
        for name in ("textworld", "native"):
            wall = runs[name].get(key, [])
            cells.append(f"{1000 * _quantile(wall, 0.5):.2f} / {1000 * _quantile(wall, 0.95):.2f}"
                         if wall else "-")
        cpus = [statistics.median(runs[n][f"{key} cpu"]) if runs[n].get(key) else float("nan")
                for n in ("textworld", "native")]
        ratio = f"{cpus[0] / cpus[1]:.0f}x" if all(c == c for c in cpus) else "-"
        print(f"| {label} | {cells[0]} | {cells[1]} | {1000 * cpus[0]:.2f} | "
              f"{1000 * cpus[1]:.2f} | {ratio} |")
    print(f"steps timed: {len(runs['textworld']['step'])} per engine")


# -- throughput ---------------------------------------------------------------------------------
def _throughput_worker(job: tuple[str, int, float, str]) -> tuple[int, float, float]:
    engine, worker, seconds, cache = job
    env = ALFWorldEnv(cache_dir=cache, engine=engine)
    steps, episode = 0, 0
    start, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        result = run_policy(env, random_admissible_policy(worker * 1000 + episode),
                      options={"split": "train", "index": (worker * 37 + episode) % 3553},
                      max_steps=20)
        steps += result.steps
        episode += 1
    env.close()
    return steps, time.perf_counter() - start, time.process_time() - cpu


def bench_throughput(workers: int, seconds: float, cache: str) -> None:
    rows = {}
    for engine in ("textworld", "native"):
        jobs = [(engine, w, seconds, cache) for w in range(workers)]
        start = time.perf_counter()
        with ProcessPoolExecutor(max_workers=workers) as pool:
            out = list(pool.map(_throughput_worker, jobs))
        wall = time.perf_counter() - start
        rows[engine] = (sum(s for s, _, _ in out), wall, sum(c for _, _, c in out))
    print(f"\n## Throughput ({workers} worker processes, random-agent episodes of 20 steps on "
          f"train games incl. resets, ~{seconds:.0f} s each; {os.cpu_count()} CPUs, load "
          f"average {os.getloadavg()[0]:.1f} at the end)")
    print("| engine | steps | wall (s) | steps / s | steps / CPU-s |")
    print("|---|---|---|---|---|")
    for engine, (steps, wall, cpu) in rows.items():
        print(f"| {engine} | {steps} | {wall:.1f} | {steps / wall:.1f} | {steps / cpu:.1f} |")
    tw, nat = rows["textworld"], rows["native"]
    print(f"native / TextWorld: {(nat[0] / nat[1]) / (tw[0] / tw[1]):.0f}x steps/s, "
          f"{(nat[0] / nat[2]) / (tw[0] / tw[2]):.0f}x steps per CPU-second")


# -- soak: the differential test at scale -------------------------------------------------------
_SOAK_ENGINES: dict = {}


def _soak_game(job: tuple[str, int, str, int]) -> dict:
    """Play one game on both engines: random admissible commands, then the planner expert."""
    split, index, cache, random_steps = job
    path = generated_game_path(split, index, Path(cache) / split)
    if not _SOAK_ENGINES:  # one pair per worker process, reused from game to game
        _SOAK_ENGINES.update((name, make_engine(name)) for name in ("textworld", "native"))
    result = compare_engines(path, key=f"{split}/{index}", max_random_steps=random_steps,
                             engines=_SOAK_ENGINES)
    mismatch = result.mismatch and {**result.mismatch, "textworld": repr(result.mismatch[
        "textworld"]), "native": repr(result.mismatch["native"])}
    return {"split": split, "index": index, "steps": len(result.choices), "won": result.won,
            "choices": result.choices, "digest": result.digest, "mismatch": mismatch,
            "random_steps": result.random_steps,
            "game_sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16]}


def _soak_games(n: int) -> list[tuple[str, int]]:
    """Every game of both eval splits, then train games evenly spaced, ``n`` in all."""
    games = [(split, i) for split in SPLITS[1:] for i in range(SPLIT_SIZES[split])][:n]
    train = max(0, n - len(games))
    size = SPLIT_SIZES["train"]
    return games + [("train", k * size // train) for k in range(min(train, size))]


def _write_record(record: str, random_steps: int, results: list[dict]) -> int:
    games = [{k: r[k] for k in ("split", "index", "choices", "digest", "won", "random_steps",
                                "game_sha256")} for r in results if not r["mismatch"]]
    payload = {"generator_version": GENERATOR_VERSION, "random_steps": random_steps,
               "games": sorted(games, key=lambda g: (SPLITS.index(g["split"]), g["index"]))}
    tmp = f"{record}.tmp"
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        json.dump(payload, f, separators=(",", ":"))
    os.replace(tmp, record)
    return len(games)


def _recorded(record: str | None, random_steps: int) -> list[dict]:
    """The games an earlier (interrupted) soak already recorded to ``record``, if compatible."""
    if not record or not Path(record).is_file():
        return []
    with gzip.open(record, "rt", encoding="utf-8") as f:
        data = json.load(f)
    if (data["generator_version"], data["random_steps"]) != (GENERATOR_VERSION, random_steps):
        return []
    return [{**g, "mismatch": None, "steps": len(g["choices"])} for g in data["games"]]


def bench_soak(games: int, workers: int, cache: str, random_steps: int, record: str | None) -> None:
    start = time.perf_counter()
    results = _recorded(record, random_steps)
    done = {(r["split"], r["index"]) for r in results}
    jobs = [(s, i, cache, random_steps) for s, i in _soak_games(games) if (s, i) not in done]
    if results:
        print(f"resuming: {len(results)} games already recorded in {record}")
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for result in pool.map(_soak_game, jobs, chunksize=2):
            results.append(result)
            if record and len(results) % 100 == 0:  # hours of TextWorld: keep what is done
                _write_record(record, random_steps, results)
    elapsed = time.perf_counter() - start
    bad = [r for r in results if r["mismatch"]]
    by_type: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        by_type[split_task_types(r["split"])[r["index"]]].append(r)
    print(f"\n## Soak: native against TextWorld ({len(results)} games, random prefix of 0-"
          f"{random_steps} commands then the planner expert; {elapsed:.0f} s, {workers} workers)")
    print("| task type | games | steps compared | won | mismatches |\n|---|---|---|---|---|")
    for task_type in TASK_TYPES:
        rs = by_type.get(task_type, [])
        print(f"| {task_type} | {len(rs)} | {sum(r['steps'] + 1 for r in rs)} | "
              f"{sum(r['won'] for r in rs)} | {sum(bool(r['mismatch']) for r in rs)} |")
    for r in bad:
        m = r["mismatch"]
        print(f"MISMATCH {r['split']}[{r['index']}] step {m['step']} (propositions equal: "
              f"{m['facts_equal']}):\n  textworld: {m['textworld']}\n  native:    {m['native']}")
    if record:
        print(f"recorded TextWorld's transcripts of {_write_record(record, random_steps, results)}"
              f" games to {record}")


# -- the hand-coded expert check ----------------------------------------------------------------
def _checked_game(job: tuple[str, int]) -> dict:
    split, index = job
    tried = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in candidate_games(split, index):
            result = play_handcoded(write_game(spec, Path(tmp) / str(spec.attempt)),
                                    seed=handcoded_seed(spec))
            tried.append((spec.attempt, result.won, result.steps, result.stopped))
            if result.won:
                break
    return {"split": split, "index": index, "task_type": split_task_types(split)[index],
            "tried": tried}


def bench_checked(per_split: int | None, workers: int, write: bool) -> None:
    jobs = [(split, i) for split in SPLITS
            for i in range(SPLIT_SIZES[split] if per_split is None else
                           min(per_split, SPLIT_SIZES[split]))]
    start = time.perf_counter()
    results = _map(_checked_game, jobs, workers)
    elapsed = time.perf_counter() - start
    print(f"\n## ALFWorld's hand-coded expert on the generated games ({len(results)} games, "
          f"{MAX_EXPERT_STEPS} expert steps at most; {elapsed:.0f} s, {workers} workers)")
    print("| task type | games | first candidate solved | re-drawn | candidates failed | "
          "expert steps (median / max) |\n|---|---|---|---|---|---|")
    for task_type in TASK_TYPES:
        rs = [r for r in results if r["task_type"] == task_type]
        if not rs:
            continue
        steps = [r["tried"][-1][2] for r in rs]
        print(f"| {task_type} | {len(rs)} | {sum(len(r['tried']) == 1 for r in rs)} | "
              f"{sum(len(r['tried']) > 1 for r in rs)} | "
              f"{sum(len(r['tried']) - 1 for r in rs)} | {statistics.median(steps):.0f} / "
              f"{max(steps)} |")
    reasons = Counter(t[3] for r in results for t in r["tried"] if not t[1])
    print(f"why the expert failed a candidate: {dict(reasons)}")
    unsolved = [r for r in results if not r["tried"][-1][1]]
    for r in unsolved:
        print(f"NO CANDIDATE SOLVED: {r['split']}[{r['index']}] {r['task_type']}")
    if write:
        full = per_split is None and not unsolved
        if not full:
            print("not writing the verdicts: they must cover every game of every split")
            return
        splits: dict[str, dict[str, int]] = {split: {} for split in SPLITS}
        for r in results:
            first = r["tried"][0][0]
            chosen = r["tried"][-1][0]
            if chosen != first:
                splits[r["split"]][str(r["index"])] = chosen
        CHECKED_FILE.parent.mkdir(parents=True, exist_ok=True)
        CHECKED_FILE.write_text(json.dumps(
            {"generator_version": GENERATOR_VERSION, "max_expert_steps": MAX_EXPERT_STEPS,
             "splits": splits}, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {CHECKED_FILE}")


# -- the planner expert and a random agent ------------------------------------------------------
def _worker_env(cache: str) -> ALFWorldEnv:
    global _ENV
    if _ENV is None:
        _ENV = ALFWorldEnv(cache_dir=cache)
    return _ENV


def _episode(job: tuple[str, str, int, str]) -> EpisodeResult:
    kind, split, index, cache = job
    env = _worker_env(cache)
    policy = expert_policy if kind == "expert" else random_admissible_policy(index)
    return run_policy(env, policy, options={"split": split, "index": index})


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


def bench_agent(kind: str, games: int, workers: int, cache: str) -> None:
    start = time.perf_counter()
    jobs = [(kind, split, i, cache) for split, i in _spread(games)]
    results = _map(_episode, jobs, workers)
    elapsed = time.perf_counter() - start
    if kind == "expert":
        _success_table("Expert (planner)", results)
        lengths = Counter(r.steps for r in results if r.won)
        print(f"plan lengths of solved games: {dict(sorted(lengths.items()))}; "
              f"wall time {elapsed:.0f} s with {workers} worker(s)")
        for r in results:
            if not r.won:
                print(f"FAILED {r.split}[{r.index}] {r.task_type} after {r.steps} steps: "
                      f"{r.gamefile}\n  last observation: {r.last_observation}")
    else:
        _success_table("Random admissible agent (50 steps)", results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generation-games", type=int, default=300)
    parser.add_argument("--latency-games", type=int, default=12)
    parser.add_argument("--latency-steps", type=int, default=20)
    parser.add_argument("--throughput-seconds", type=float, default=60.0)
    parser.add_argument("--soak-games", type=int, default=300)
    parser.add_argument("--soak-random-steps", type=int, default=8,
                        help="the most random commands before the expert (the shipped record: 8)")
    parser.add_argument("--record", default=None,
                        help="write TextWorld's transcripts of the soak to this .json.gz file")
    parser.add_argument("--checked-games", type=int, default=None,
                        help="games per split for the hand-coded expert (default: all)")
    parser.add_argument("--write-checked", action="store_true",
                        help="store the hand-coded expert's verdicts for the generator")
    parser.add_argument("--expert-games", type=int, default=300)
    parser.add_argument("--random-games", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache", default=None, help="game cache (default: a temporary folder)")
    sections = ["generation", "latency", "throughput", "soak", "checked", "expert", "random"]
    parser.add_argument("--only", nargs="*", default=None, choices=sections)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or tmp
        wanted = set(args.only or sections)
        if "generation" in wanted:
            bench_generation(args.generation_games)
        if "latency" in wanted:
            bench_latency(args.latency_games, args.latency_steps, cache)
        if "throughput" in wanted:
            bench_throughput(args.workers, args.throughput_seconds, cache)
        if "soak" in wanted:
            bench_soak(args.soak_games, args.workers, cache, args.soak_random_steps, args.record)
        if "checked" in wanted:
            bench_checked(args.checked_games, args.workers, args.write_checked)
        if "expert" in wanted:
            bench_agent("expert", args.expert_games, args.workers, cache)
        if "random" in wanted:
            bench_agent("random", args.random_games, args.workers, cache)


if __name__ == "__main__":
    main()
