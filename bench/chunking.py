"""Generation chunking: how prompts are grouped into generation calls, against the time they
take, on the same episodes (checked), in one process, alternating.

Run ``python bench/chunking.py`` (``--section heldout|rollout|all``; by default the ALFWorld
recipe from its BC model, ``runs/learn-alfworld-bc/final``; ``--config``, ``--model``,
``--repeats``). One torch thread. Every row prints its seconds, its generation calls, the padded
prompt tokens they prefilled (rows × the longest prompt of each call) and its ratio to the
first row. A chunk pads its prompts to its longest and decodes until its longest response
ends; each row samples from its own seed, so chunking changes the cost, not the tokens.

* ``heldout``: ``--episodes`` held-out episodes at each ``eval.width`` of ``--widths`` (0: the
  rollout's pool, episodes in waves of it; wider: all at once, each turn's prompts sorted by
  length over all of them);
* ``rollout``: one training rollout (step 0: ``n_groups × group_size`` episodes) at each
  ``rollout.gen_batch_size`` of ``--chunks`` (prompts per generation call, sorted by length).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ALFWORLD_CONFIG = "configs/recipe/alfworld-rl.yaml"
ALFWORLD_MODEL = "runs/learn-alfworld-bc/final"

sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def measure(cases: list[str], play: Callable[[str], Any], repeats: int) -> dict[str, dict]:
    """Play each case ``repeats`` times, alternating; per case the median seconds, the last
    run's generation calls and padded prompt tokens, and what it played (``play``'s result)."""
    import wrappers.agents.sampling as sampling

    calls: Counter = Counter()
    generate = sampling.generate_tokens

    def counted(model, prompts, *a, **k):
        calls["calls"] += 1
        calls["padded"] += len(prompts) * max(len(p) for p in prompts)
        return generate(model, prompts, *a, **k)

    sampling.generate_tokens = counted  # generate_batched looks it up at each call
    rows: dict[str, dict] = {case: {"s": []} for case in cases}
    try:
        for _ in range(repeats):
            for case in cases:
                calls.clear()
                start = time.perf_counter()
                played = play(case)
                rows[case]["s"].append(time.perf_counter() - start)
                rows[case] |= dict(calls) | {"played": played}
    finally:
        sampling.generate_tokens = generate
    return rows


def print_table(title: str, column: str, rows: dict[str, dict]) -> bool:
    """The rows as a markdown table; whether every case played the same as the first."""
    first = next(iter(rows.values()))
    same = all(row["played"] == first["played"] for row in rows.values())
    base = statistics.median(first["s"])
    print(f"{title}; the same episodes in every row: {same}")
    print(f"| {column} | generation calls | padded prompt tokens | s | ratio |")
    print("|---|---|---|---|---|")
    for case, row in rows.items():
        median = statistics.median(row["s"])
        print(f"| {case} | {row['calls']} | {row['padded']:,} | {median:.1f} | "
              f"{median / base:.2f} |")
    return same


def heldout_section(args: argparse.Namespace, config) -> bool:
    from arlarena_baselines.rollout import make_env_pool
    from arlarena_baselines.trainer.config import apply_overrides
    from arlarena_baselines.trainer.heldout import heldout_rollout
    from arlarena_baselines.trainer.policy import Policy, env_factory

    config = apply_overrides(config, [f"eval.episodes={args.episodes}"])
    policy = Policy.load(config)
    r = config.rollout
    try:
        with make_env_pool(env_factory(config), r.n_groups * r.group_size, r.env_workers) as pool:
            def play(width: str) -> list:
                at = apply_overrides(config, [f"eval.width={width if width != '0' else 'null'}"])
                return sorted((e.traj_id, e.turns, e.won, e.episode_return)
                              for e in heldout_rollout(policy, at, pool).episodes)

            rows = measure(args.widths.split(","), play, args.repeats)
    finally:
        policy.close()
    return print_table(f"{args.episodes} held-out episodes (rollout pool "
                       f"{r.n_groups * r.group_size}, gen_batch_size {r.gen_batch_size})",
                       "eval.width", rows)


def rollout_section(args: argparse.Namespace, config) -> bool:
    from arlarena_baselines.trainer.config import apply_overrides
    from arlarena_baselines.trainer.rl import RLTrainer

    def play(chunk: str) -> list:
        with tempfile.TemporaryDirectory() as out:
            trainer = RLTrainer(apply_overrides(config, [
                f"rollout.gen_batch_size={chunk}", "eval.episodes=0", f"run.out={out}",
                "run.progress=false", "run.tensorboard=false"]))
            try:
                return [tuple(s.response_ids) for s in trainer.rollout(0, 0).samples]
            finally:
                trainer.close()

    r = config.rollout
    return print_table(f"one training rollout of {r.n_groups} x {r.group_size} episodes (with "
                       "the trainer's set-up, a few seconds the same in every row)",
                       "gen_batch_size", measure(args.chunks.split(","), play, args.repeats))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", choices=("heldout", "rollout", "all"), default="all")
    parser.add_argument("--config", default=ALFWORLD_CONFIG)
    parser.add_argument("--model", default=ALFWORLD_MODEL, help="the checkpoint that plays")
    parser.add_argument("--episodes", type=int, default=201, help="heldout: episodes")
    parser.add_argument("--widths", default="0,1024", help="heldout: eval.width values")
    parser.add_argument("--chunks", default="128,32,16", help="rollout: gen_batch_size values")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    args = parser.parse_args()
    if not Path(args.model).is_dir():
        print(f"skipped: no checkpoint at {args.model} (make learn-alfworld's BC builds it)")
        return 0

    from arlarena_baselines.trainer.config import load_config
    from arlarena_baselines.trainer.runs import TorchThreads

    config = load_config(args.config, [f"model.name={args.model}", "run.threads=1", *args.set])
    threads = TorchThreads(1)
    try:
        same = True
        if args.section in ("heldout", "all"):
            same &= heldout_section(args, config)
        if args.section in ("rollout", "all"):
            same &= rollout_section(args, config)
    finally:
        threads.restore()
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
