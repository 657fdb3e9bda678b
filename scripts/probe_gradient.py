"""Is an RL batch's gradient signal or noise? Cosines between the gradients of independent batches.

From one checkpoint, ``--batches`` K rollout batches of an ``arlarena train rl`` config (the
tasks of training steps 0..K-1, so no two share a game) each give the policy-loss gradient of
the whole batch at the start weights (no update in between, ratio 1). If a batch's gradient is
the true gradient μ plus noise of covariance Σ/n (n episodes), two independent batches meet at

    E[cos] ≈ s / (s + 1),   s = n |μ|² / tr Σ   (the batch's signal-to-noise ratio),

so the mean cosine over the K(K-1)/2 pairs estimates s, and s grows linearly with n: the batch
where the cosine would reach 0.5 (s = 1) is n (1 - c) / c episodes. Near 0, the batch is mostly
noise and a step follows it as much as the signal.

The gradient is split by what the advantage is computed from (linear for group-mean advantages
without std normalisation, so ``method`` = ``success`` + ``format`` there):

- ``method``: the config's estimator on the episode returns, as the trainer does;
- ``success``: the same estimator on the env's return alone (the format penalty added back);
- ``format``: the same estimator on the format penalty alone (the positive control: a signal
  present at every turn, which RL should follow before the sparse success).

Printed per part: |g| per batch, the mean pairwise cosine ± its SE, s and the episodes for
cos = 0.5; and, within a batch, the cosine of ``method`` with each part. ``--mix 3,10`` adds
the rows ``success + w × format``: what a format penalty w times the config's would give, for
advantages linear in the return (group means without std normalisation). Example (the
``make learn-alfworld`` recipe's BC checkpoint)::

    python scripts/probe_gradient.py --config configs/recipe/alfworld-rl.yaml \\
        --model runs/learn-alfworld-bc/final --batches 4 --json probe_gradient.json
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import tempfile
from collections import defaultdict

import numpy as np
import torch

from arlarena_baselines.rollout import StepSample
from arlarena_baselines.trainer.config import load_config
from arlarena_baselines.trainer.rl import RLTrainer

PARTS = ("method", "success", "format")


def with_scores(batch: list[StepSample], penalty: float) -> dict[str, list[StepSample]]:
    """The batch three times, its returns and turn rewards as played, the env's alone (the
    format penalty added back: the trajectory's invalid turns in ``episode_score``, the
    turn's in ``reward``) and the format penalty's alone."""
    invalid: dict[str, int] = defaultdict(int)
    for s in batch:
        invalid[s.traj_id] += not s.valid
    return {
        "method": list(batch),
        "success": [dataclasses.replace(
            s, episode_score=s.episode_score + penalty * invalid[s.traj_id],
            reward=s.reward + penalty * (not s.valid)) for s in batch],
        "format": [dataclasses.replace(
            s, episode_score=-penalty * invalid[s.traj_id],
            reward=-penalty * (not s.valid)) for s in batch],
    }


def batch_gradient(trainer: RLTrainer, samples: list[StepSample],
                   reference: list[list[float]] | None = None) -> torch.Tensor:
    """The flat policy-loss gradient of the whole batch at the current weights (``reference``:
    the batch's log π_ref, where the method has a KL term; the same for every part)."""
    model = trainer.policy.model
    model.zero_grad(set_to_none=True)
    trainer.accumulate_gradient(samples, trainer.advantages(samples), reference, [], [])
    grads = [p.grad.flatten() for p in model.parameters() if p.grad is not None]
    model.zero_grad(set_to_none=True)
    return torch.cat(grads).double()


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(a @ b / (a.norm() * b.norm()).clamp_min(1e-30))


def summary(grads: list[torch.Tensor], episodes: int) -> dict[str, float]:
    """Mean pairwise cosine (± SE over pairs), the implied batch SNR s and the episodes for
    cos = 0.5."""
    cosines = [cosine(a, b) for a, b in itertools.combinations(grads, 2)]
    c = float(np.mean(cosines))
    se = float(np.std(cosines, ddof=1) / np.sqrt(len(cosines))) if len(cosines) > 1 else 0.0
    snr = c / (1 - c) if 0 < c < 1 else float("nan")
    return {"cos": c, "cos_se": se, "snr": snr,
            "episodes_for_cos_half": episodes / snr if snr > 0 else float("inf"),
            "grad_norm": float(np.mean([float(g.norm()) for g in grads])),
            "pairs": cosines}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/recipe/alfworld-rl.yaml")
    parser.add_argument("--model", required=True, help="the checkpoint whose gradients to probe")
    parser.add_argument("--batches", type=int, default=4, help="independent batches (>= 2)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="more config overrides (e.g. rollout.n_groups=32, rl.method=GiGPO)")
    parser.add_argument("--mix", default="", help="format weights w for rows success + w x "
                        "format (comma-separated)")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args()
    mixes = [float(w) for w in args.mix.split(",") if w.strip()]
    if args.batches < 2:
        parser.error("--batches must be at least 2: a cosine needs two batches")
    out = tempfile.TemporaryDirectory(prefix="probe-gradient-")  # the trainer's; nothing kept
    config = load_config(args.config or None, [
        f"model.name={args.model}", "run.progress=false", "run.tensorboard=false",
        f"run.out={out.name}", *args.set,
    ])
    r = config.rollout
    episodes = r.n_groups * r.group_size
    trainer = RLTrainer(config)
    grads: dict[str, list[torch.Tensor]] = {part: [] for part in PARTS}
    within: dict[str, list[float]] = {part: [] for part in PARTS[1:]}
    try:
        for k in range(args.batches):
            rollout = trainer.rollout(k, 0)
            batch = rollout.samples
            won = np.mean([e.won for e in rollout.episodes])
            valid = np.mean([s.valid for s in batch])
            reference = trainer.reference_log_probs(batch)  # the parts differ in rewards only
            for part, samples in with_scores(batch, r.format_penalty).items():
                grads[part].append(batch_gradient(trainer, samples, reference))
            for part in PARTS[1:]:
                within[part].append(cosine(grads["method"][-1], grads[part][-1]))
            print(f"batch {k + 1}/{args.batches}: {episodes} episodes, {len(batch)} turns, "
                  f"success {won:.3f}, valid format {valid:.3f}", flush=True)
    finally:
        trainer.close()
        out.cleanup()
    for w in mixes:
        mixed = [g + w * f for g, f in zip(grads["success"], grads["format"], strict=True)]
        grads[f"success + {w:g} x format"] = mixed
        within[f"success + {w:g} x format"] = [cosine(m, x) for m, x in
                                               zip(grads["method"], mixed, strict=True)]
    results = {part: summary(part_grads, episodes) for part, part_grads in grads.items()}
    print(f"\n{config.rl.method} on {r.env}, {episodes} episodes a batch, {args.batches} batches")
    print("| part | mean |g| | cos between batches ± SE | batch SNR s | episodes for cos 0.5 "
          "| cos with method |")
    print("|---|---|---|---|---|---|")
    for part, res in results.items():
        res["cos_with_method"] = float(np.mean(within[part])) if part in within else 1.0
        print(f"| {part} | {res['grad_norm']:.4g} | {res['cos']:+.3f} ± {res['cos_se']:.3f} | "
              f"{res['snr']:.3g} | {res['episodes_for_cos_half']:.0f} | "
              f"{res['cos_with_method']:+.3f} |")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"model": args.model, "config": args.config, "overrides": args.set,
                       "method": config.rl.method, "episodes": episodes,
                       "batches": args.batches, "results": results}, handle, indent=2)


if __name__ == "__main__":
    main()
