"""Held-out evaluation speed against its width (``eval.width``): the same episodes played in
waves of the rollout's pool and in one wider pool, in the same process, alternating.

Run ``python bench/heldout.py`` (the ALFWorld recipe's validation games from its BC model,
``runs/learn-alfworld-bc/final``; ``--config``, ``--model``, ``--episodes``, ``--widths``,
``--repeats``). Each row plays ``--episodes`` held-out episodes at one width with one torch
thread and prints its seconds, the generation calls and the padded prompt tokens they
prefilled (rows × the longest prompt of each call), and its ratio to the first width. Every
width plays the same episodes (checked: the same turns and outcomes): a wider pool changes
how prompts are chunked (sorted by length over all of them, not one wave's), not what they
sample.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ALFWORLD_CONFIG = "configs/recipe/alfworld-rl.yaml"
ALFWORLD_MODEL = "runs/learn-alfworld-bc/final"

sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=ALFWORLD_CONFIG)
    parser.add_argument("--model", default=ALFWORLD_MODEL, help="the checkpoint that plays")
    parser.add_argument("--episodes", type=int, default=201)
    parser.add_argument("--widths", default="0,1024",
                        help="eval.width values, comma-separated (0: the rollout's pool)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    args = parser.parse_args()
    if not Path(args.model).is_dir():
        print(f"skipped: no checkpoint at {args.model} (make learn-alfworld's BC builds it)")
        return 0

    import wrappers.agents.sampling as sampling
    from arlarena_baselines.rollout import make_env_pool
    from arlarena_baselines.trainer.config import apply_overrides, load_config
    from arlarena_baselines.trainer.heldout import heldout_rollout
    from arlarena_baselines.trainer.policy import Policy, env_factory
    from arlarena_baselines.trainer.runs import TorchThreads

    config = load_config(args.config, [f"model.name={args.model}",
                                       f"eval.episodes={args.episodes}", *args.set])
    threads = TorchThreads(1)
    policy = Policy.load(config)
    calls: Counter = Counter()
    generate = sampling.generate_tokens

    def counted(model, prompts, *a, **k):
        calls["calls"] += 1
        calls["padded"] += len(prompts) * max(len(p) for p in prompts)
        return generate(model, prompts, *a, **k)

    sampling.generate_tokens = counted  # generate_batched looks it up at each call
    widths = [int(w) for w in args.widths.split(",")]
    times: dict[int, list[float]] = {w: [] for w in widths}
    played: dict[int, list] = {}
    work: dict[int, dict] = {}
    r = config.rollout
    try:
        with make_env_pool(env_factory(config), r.n_groups * r.group_size, r.env_workers) as pool:
            for _ in range(args.repeats):
                for width in widths:
                    at = apply_overrides(config, [f"eval.width={width or 'null'}"])
                    calls.clear()
                    start = time.perf_counter()
                    rollout = heldout_rollout(policy, at, pool)
                    times[width].append(time.perf_counter() - start)
                    played[width] = sorted((e.traj_id, e.turns, e.won, e.episode_return)
                                           for e in rollout.episodes)
                    work[width] = dict(calls)
    finally:
        sampling.generate_tokens = generate
        policy.close()
        threads.restore()
    same = all(played[w] == played[widths[0]] for w in widths)
    first = statistics.median(times[widths[0]])
    print(f"{args.episodes} held-out episodes of {args.config} from {args.model}, 1 thread, "
          f"median of {args.repeats}; the same episodes at every width: {same}")
    print("| eval.width | pool | generation calls | padded prompt tokens | s | ratio |")
    print("|---|---|---|---|---|---|")
    for width in widths:
        median = statistics.median(times[width])
        pool_width = max(min(width, args.episodes), r.n_groups * r.group_size)
        print(f"| {width or 'null'} | {pool_width} | {work[width]['calls']} | "
              f"{work[width]['padded']:,} | {median:.1f} | {median / first:.2f} |")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
