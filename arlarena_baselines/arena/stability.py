"""Stability as a measure with an error bar: the report's stability table.

Per run (:attr:`~.results.RunResult.drop`): the fall of held-out success from its peak
evaluation to the last, ± the standard error of that paired difference, the step of a lasting
drop beyond :data:`~.stats.COLLAPSE_Z` paired standard errors (a collapse); the peaks over the
steps of KL(πθ‖πold), of the k3 KL to π_ref and of the gradient norm. Per configuration: the
mean drop over its seeds, and its effect against GRPO's on the same seeds (:func:`~.stats.
seed_effect`: paired by seed, with the seeds' spread as its error and their range beside).

Holds :func:`drops`, :func:`mean_drop` and :func:`stability_section`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.arena.stats import COLLAPSE_Z, LASTING_EVALS, Z, seed_effect
from arlarena_baselines.arena.tables import num, signed, table

__all__ = ["drops", "mean_drop", "stability_section"]

REFERENCE = "GRPO"


def drops(config: Any) -> dict[int, tuple[float, float]]:
    """``{seed: (drop from peak, its standard error)}`` of the runs with a held-out curve."""
    return {run.seed: (run.drop.drop, run.drop.se) for run in config.runs
            if run.drop is not None}


def mean_drop(config: Any) -> tuple[float, float]:
    """The drop from peak, mean over the seeds ± its standard error (:func:`~.stats.
    seed_effect` against no drop)."""
    own = drops(config)
    mean, se, _ = seed_effect(own, dict.fromkeys(own, (0.0, 0.0)))
    return mean, se


def _against(config: Any, reference: Any | None) -> list[str]:
    """The drop's effect against the reference's on the shared seeds, and their range."""
    if reference is None or reference is config:
        return ["–", "–"]
    mine, theirs = drops(config), drops(reference)
    mean, se, n = seed_effect(mine, theirs)
    if not n:
        return ["–", "–"]
    diffs = [mine[s][0] - theirs[s][0] for s in sorted(mine.keys() & theirs.keys())]
    spread = f"{min(diffs):+.3f} … {max(diffs):+.3f}" if n > 1 else "one seed"
    return [f"{signed((mean, se))} (seeds: {n})", spread]


def _peaks(config: Any) -> str:
    """Each run's peak held-out evaluation: mean at step (sSEED)."""
    return ", ".join(f"{run.drop.peak:.3f} @ {run.drop.peak_step} (s{run.seed})"
                     for run in config.runs if run.drop is not None) or "–"


def _collapses(config: Any) -> str:
    return ", ".join(f"{at} (s{seed})" for seed, at in config.fired("drop_step")) or "none"


def stability_section(configs: Sequence[Any], held_out: str) -> list[str]:
    """The stability table over every configuration but the start and the stress grid's
    (which has its own), each against GRPO's configuration of the same setting."""
    rows = []
    for c in configs:
        if c.role in ("start", "stress"):
            continue
        reference = next((r for r in configs if r.method == REFERENCE
                          and r.setting == c.setting), None)
        peak_kl_ref = c.peak(mn.KL_REF)
        rows.append([c.method, c.setting, str(len(c.runs)), num(c.mean(mn.EPISODES), 4),
                     _peaks(c), signed(mean_drop(c)),
                     *_against(c, reference), _collapses(c), num(c.peak(mn.KL_OLD), 3),
                     "–" if math.isnan(peak_kl_ref) else num(peak_kl_ref, 3),
                     num(c.peak(mn.GRAD_NORM_MAX), 3)])
    if not rows:
        return []
    intro = (
        f"Stability from the held-out curve ({held_out}), per run and then per configuration. "
        "Rollouts a step: the episodes drawn per update batch, mean over the steps (a "
        "filtering method draws more to keep its groups: its budget per update is larger). "
        "Peak: each run's highest evaluation (step 0 included) and its step; drop: the peak "
        "minus the last evaluation, on the same levels, mean over the seeds ± its standard "
        "error (the seeds' spread; with one seed, the paired episodes'); Δ drop vs "
        f"{REFERENCE}: the drop less {REFERENCE}'s in the same setting, paired by seed, ± its "
        "standard error, and the range of the per-seed differences; collapse: the evaluation "
        f"from which success stayed below the peak by more than {COLLAPSE_Z:g} paired standard "
        f"errors through the last, over at least {LASTING_EVALS} evaluations (sN: seed N); "
        f"more than the {Z:g} of the other verdicts because the peak is the highest of several "
        "noisy evaluations. The peaks over the steps of KL(πθ‖πold), of the k3 KL to πref "
        "(logged only with a reference model: a KL term or `rl.reference_kl`) and of the "
        "gradient norm (before clipping), the largest over the seeds.")
    return ["", "## Stability", "", intro, "",
            *table(["method", "setting", "seeds", "rollouts a step", "peak held-out @ step",
                    "drop from peak",
                    f"Δ drop vs {REFERENCE}", "per-seed range", "collapse", "peak KL old",
                    "peak KL ref", "peak grad norm"], rows)]
