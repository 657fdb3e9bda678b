"""The RL invariants, checked on a recipe's own first step, before a disappointing result is
called a limit of the method (the developers' guide: suspect a defect before a limit).

From ``--config`` (with ``--set`` overrides, e.g. a smaller batch), this script builds the
trainer, rolls out step 0 and checks:

1. **The same seed gives the same episodes:** step 0 rolled out twice gives the same tokens and
   the same old log-probs.
2. **π_old is the distribution sampled, and the one differentiated:** each response token's
   old log-prob (the sampler's, with ``rollout.sampler_log_probs``) equals a fresh forward
   pass of the unchanged policy at the training temperature, without the shared-prefix
   shortcut.
3. **The ratio is 1 before the first update:** on every token of the first update mini-batch
   log π − log π_old is 0 (up to float rounding).
4. **Later mini-batches are off-policy** (with ``rl.mini_batches`` > 1): after an optimizer
   step, the ratio has moved.

It prints each measured quantity against its tolerance and exits 1 when one fails. Example
(the ALFWorld recipe, four games of eight rollouts)::

    python scripts/rl_invariants.py --config configs/recipe/alfworld-rl.yaml \\
        --set model.name=runs/learn-alfworld-bc/final --set rollout.n_groups=4
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from typing import Any

import torch

from arlarena_baselines.rollout import sample_log_probs
from arlarena_baselines.trainer.config import load_config
from arlarena_baselines.trainer.rl import RLTrainer

TOLERANCE = 1e-4
"""Largest |log-prob difference| taken as equal: float32 rounding over a different batching."""


def _max_abs(a: list[list[float]], b: list[list[float]]) -> float:
    return max((abs(x - y) for ra, rb in zip(a, b, strict=True)
                for x, y in zip(ra, rb, strict=True)), default=0.0)


def check(config_path: str | None, overrides: list[str]) -> list[dict[str, Any]]:
    """The invariants' rows: ``name``, the measured ``value``, the ``bound`` it is held to and
    whether it ``holds`` (``value`` <= ``bound``, or > it for the off-policy row)."""
    with tempfile.TemporaryDirectory() as out:
        config = load_config(config_path, [*overrides, "eval.episodes=0", "run.progress=false",
                                           "run.tensorboard=false", f"run.out={out}"])
        trainer = RLTrainer(config)
        try:
            batch = trainer.rollout(0, 0).samples
            again = trainer.rollout(0, 0).samples
            same = ([s.response_ids for s in batch] == [s.response_ids for s in again]
                    and _max_abs([s.old_log_probs for s in batch],
                                 [s.old_log_probs for s in again]) == 0.0)
            policy = trainer.policy
            with torch.no_grad():
                fresh, _ = sample_log_probs(
                    policy.model, batch, policy.pad_id,
                    micro_batch_size=config.rl.micro_batch_size, autocast_dtype=policy.amp,
                    temperature=policy.temperature, share_prefix=False)
            sampled = _max_abs([s.old_log_probs for s in batch], fresh)
            advantages = trainer.advantages(batch)
            reference = trainer.reference_log_probs(batch)
            rows: list[Any] = []
            ends = []
            for index in trainer.mini_batches(batch, 0, 0):
                trainer.update([batch[i] for i in index], advantages[index],
                               None if reference is None else [reference[i] for i in index],
                               rows, [])
                ends.append(len(rows))
        finally:
            trainer.close()

    def log_ratios(part: list[Any]) -> torch.Tensor:
        return torch.cat([(r.log_prob - r.old_log_prob)[r.mask > 0] for r in part])

    first = float(log_ratios(rows[: ends[0]]).abs().max())
    result = [
        {"name": "same seed, same episodes (0: identical)", "value": 0.0 if same else 1.0,
         "bound": 0.0},
        {"name": f"max |old log-prob - forward pass| over {sum(len(s.response_ids) for s in batch)}"
                 " tokens", "value": sampled, "bound": TOLERANCE},
        {"name": "max |log ratio| in the first update mini-batch", "value": first,
         "bound": TOLERANCE},
    ]
    if len(ends) > 1:
        later = float(log_ratios(rows[ends[0]:]).abs().mean())
        result.append({"name": f"mean |log ratio| in update mini-batches 2-{len(ends)}"
                               " (must exceed)", "value": later, "bound": 1e-7})
    for row in result:
        above = row["name"].endswith("(must exceed)")
        row["holds"] = row["value"] > row["bound"] if above else row["value"] <= row["bound"]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None, help="the recipe's RL config")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="config overrides (repeatable)")
    args = parser.parse_args()
    rows = check(args.config, args.set)
    for row in rows:
        verdict = "holds" if row["holds"] else "FAILS"
        print(f"{verdict:5s}  {row['name']}: {row['value']:.3g} (bound {row['bound']:.0e})")
    return 0 if all(row["holds"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
