"""Why a Sokoban policy fails: held-out success by the level's shortest solution, and what the
failed episodes did.

Plays one episode per held-out level (seeds ``eval.seed + i``, as ``arlarena train`` evaluates)
with the policy of an ``arlarena train`` config at the given sampling, then prints:

- success by the length of the level's shortest solution (BFS), as ``won/levels``;
- over the failed episodes: malformed turns (the format check failed), no-op turns (a move
  that left the state unchanged: a walk or push into a wall, or ``still``, which a near-greedy
  policy tends to repeat until the turn limit), and how many ended deadlocked (no solution
  from the final state).

Example (the ``make learn`` recipe's checkpoint)::

    python scripts/sokoban_failures.py --config configs/recipe/sokoban-rl.yaml \\
        --model runs/learn-bc/final --episodes 256 --temperature 0.6
    python scripts/sokoban_failures.py --model runs/bc-h1/final --set rollout.history_length=1
"""

from __future__ import annotations

import argparse
import dataclasses
from collections import Counter, defaultdict

import torch

from arlarena_baselines.rollout import StepSample, make_env_pool
from arlarena_baselines.trainer.config import load_config
from arlarena_baselines.trainer.heldout import heldout_rollout
from arlarena_baselines.trainer.policy import Policy, env_factory
from arlarena_baselines.trainer.sampling import eval_sampling
from arlarena_envs.sokoban.env import SokobanEnv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/recipe/sokoban-rl.yaml")
    parser.add_argument("--model", help="checkpoint to evaluate (default: the config's model)")
    parser.add_argument("--episodes", type=int, default=256)
    parser.add_argument("--temperature", type=float, help="default: the config's eval sampling")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="config override, as for `arlarena train` (repeatable)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    overrides = [*args.set, f"eval.episodes={args.episodes}"]
    overrides += [f"model.name={args.model}"] if args.model else []
    config = load_config(args.config, overrides)
    factory = env_factory(config)
    env = factory().unwrapped
    if not isinstance(env, SokobanEnv):
        raise SystemExit(f"{config.rollout.env} is not a Sokoban env")
    sampling = eval_sampling(config)
    if args.temperature is not None:
        sampling = dataclasses.replace(sampling, temperature=args.temperature)
    policy = Policy.load(config)
    pool = make_env_pool(factory, min(args.episodes, 64), 0)
    try:
        rollout = heldout_rollout(policy, config, pool, sampling=sampling, progress=True)
    finally:
        pool.close()
        policy.close()

    turns: dict[str, list[StepSample]] = defaultdict(list)
    for sample in rollout.samples:
        turns[sample.traj_id].append(sample)
    by_length: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    failures: Counter[str] = Counter()
    for episode in rollout.episodes:
        env.reset(seed=episode.seed)
        counts = by_length[len(env.shortest_solution() or [])]
        counts[0] += int(episode.won)
        counts[1] += 1
        if episode.won:
            continue
        steps = sorted(turns[episode.traj_id], key=lambda s: s.step)
        failures["episodes"] += 1
        failures["turns"] += len(steps)
        failures["malformed turns"] += sum(not s.valid for s in steps)
        for sample in steps:
            grid, *_ = env.step(sample.action)
            failures["no-op turns"] += grid == sample.anchor
        failures["deadlocked"] += env.shortest_solution() is None

    won = sum(e.won for e in rollout.episodes)
    print(f"success {won}/{len(rollout.episodes)} = {won / len(rollout.episodes):.3f} "
          f"(T = {sampling.temperature}, top-p {sampling.top_p}, top-k {sampling.top_k})")
    print("shortest solution | won / levels")
    for length, (w, n) in sorted(by_length.items()):
        print(f"{length:>17} | {w} / {n}")
    print("failed episodes: " + ", ".join(f"{k} {v}" for k, v in failures.items()))


if __name__ == "__main__":
    main()
