"""How much of an RL update is signal and how much is noise: the antithetic (±δ) probe.

From a checkpoint θ₀, ``--steps`` training steps of an ``arlarena train rl`` config give
θ₀ + δ. The probe then evaluates θ₀, θ₀ + δ and θ₀ − δ on the same held-out levels (every
episode from its own random stream, so the three meet the same levels with the same draws) at
each ``--temperatures``, and splits the change of held-out success:

- signal = (S(θ₀ + δ) − S(θ₀ − δ)) / 2: the part odd in δ, what the update's direction is
  worth (to first order);
- damage = (S(θ₀ + δ) + S(θ₀ − δ)) / 2 − S(θ₀): the part even in δ, what a step of that size
  costs whichever way it points (the curvature: mostly the noise in δ).

An update helps when its signal exceeds its damage. Both come with the standard error of their
per-level paired differences. Sweeping ``--lr`` (or the batch, ``--set rollout.n_groups=…``)
finds the step size where the signal stands out of the damage, which is how the CPU recipe's
learning rate was set (``docs/rl-vs-bc.md``). Example::

    python scripts/probe_antithetic.py --config configs/recipe/sokoban-rl.yaml \\
        --model runs/learn-bc/final --lr 1e-3 --steps 1 --episodes 256
"""

from __future__ import annotations

import argparse
import json
import tempfile

import numpy as np
import torch

from arlarena_baselines.rollout import SamplingParams
from arlarena_baselines.trainer.config import load_config
from arlarena_baselines.trainer.heldout import heldout_rollout
from arlarena_baselines.trainer.rl import RLTrainer
from arlarena_baselines.trainer.sampling import response_budget


def held_out_wins(trainer: RLTrainer, temperature: float) -> np.ndarray:
    """Won (0/1) per held-out level, in level order, at ``temperature`` (full softmax)."""
    sampling = SamplingParams(temperature, max_new_tokens=response_budget(trainer.config))
    rollout = heldout_rollout(trainer.policy, trainer.config, trainer.pool, sampling=sampling)
    won = {e.seed: float(e.won) for e in rollout.episodes}
    return np.array([won[s] for s in sorted(won)])


def paired(values: np.ndarray) -> tuple[float, float]:
    """Mean and standard error of per-level values."""
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(len(values)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/recipe/sokoban-rl.yaml")
    parser.add_argument("--model", required=True, help="the starting checkpoint θ₀")
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--steps", type=int, default=1, help="training steps that make δ")
    parser.add_argument("--episodes", type=int, default=256, help="held-out levels")
    parser.add_argument("--temperatures", default="1.0,0.4")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="more config overrides (e.g. rollout.n_groups=64)")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args()
    config = load_config(args.config, [
        f"model.name={args.model}", f"rl.lr={args.lr}", f"rl.steps={args.steps}",
        f"eval.episodes={args.episodes}", "run.progress=false", "run.tensorboard=false",
        f"run.out={tempfile.mkdtemp(prefix='probe-antithetic-')}", *args.set,
    ])
    trainer = RLTrainer(config)
    try:
        model = trainer.policy.model
        start = {k: v.detach().clone() for k, v in model.state_dict().items()}
        for step in range(args.steps):
            metrics = trainer.train_step(step)
            print(f"step {step + 1}: training success {metrics['rollout/success_rate']:.3f}, "
                  f"{metrics['rollout/step_samples']:.0f} turns")
        delta = {k: v.detach() - start[k] for k, v in model.state_dict().items()}
        wins: dict[int, dict[float, np.ndarray]] = {}
        temperatures = [float(t) for t in args.temperatures.split(",")]
        for sign in (0, 1, -1):
            with torch.no_grad():
                model.load_state_dict({k: start[k] + sign * delta[k] for k in start})
            trainer.policy.sync()
            wins[sign] = {t: held_out_wins(trainer, t) for t in temperatures}
    finally:
        trainer.close()
    norm = float(torch.sqrt(sum((d.float() ** 2).sum() for d in delta.values())))
    print(f"|δ| = {norm:.4g} after {args.steps} step(s) at lr {args.lr:g}; "
          f"{args.episodes} held-out levels")
    print("| T | S(θ₀) | S(θ₀+δ) | S(θ₀−δ) | signal ± SE | damage ± SE |")
    print("|---|---|---|---|---|---|")
    results = []
    for t in temperatures:
        s0, plus, minus = wins[0][t], wins[1][t], wins[-1][t]
        signal, damage = paired((plus - minus) / 2), paired((plus + minus) / 2 - s0)
        results.append({"temperature": t, "start": s0.mean(), "plus": plus.mean(),
                        "minus": minus.mean(), "signal": signal, "damage": damage})
        print(f"| {t:g} | {s0.mean():.3f} | {plus.mean():.3f} | {minus.mean():.3f} | "
              f"{signal[0]:+.3f} ± {signal[1]:.3f} | {damage[0]:+.3f} ± {damage[1]:.3f} |")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"lr": args.lr, "steps": args.steps, "delta_norm": norm,
                       "overrides": args.set, "results": results}, handle, indent=2)


if __name__ == "__main__":
    main()
