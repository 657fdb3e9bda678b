"""The arena's statistics: means with standard errors, paired differences, stability, selection.

Holds :func:`mean_se`, :func:`paired_difference`, :func:`stability_variance` (the study's
criterion, §3.1: the variance of success over the final 20% of steps), :func:`peak_drop` (a
held-out curve's fall from its peak, and the step from which it lasts beyond
:data:`COLLAPSE_Z` paired standard errors: this arena's sign of collapse beside the collapse
detector), :func:`seed_effect` (a per-seed quantity against a reference method's, with its
across-seed spread), :func:`across_seeds` (runs' paired differences against a start, per
method, with their spread over training seeds beside the paired SE) and :func:`select_best`
(the study's per-method grid search: the best configuration among the stable ones).

Why the held-out curve and not the study's variance: one step's training success varies by
p(1−p) / levels from the levels drawn alone (each level all won or all lost), between 0.06 at
4 levels a step and 0.004 at 64, against the study's fixed threshold of 0.01. The held-out
curve replays the same levels at every evaluation, so a fall is tested against the noise of the
evaluation itself, whatever the training batch.

Outcomes come grouped by seed (one list of per-episode values per training seed). With one
seed the standard error is the episodes' (binomial for success); with several it is the larger
of that and the standard error across the seeds' means, so that a claim carries the
run-to-run noise of training as well as the noise of the held-out levels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from arlarena_baselines.algos.diagnostics import CollapseDetector

__all__ = [
    "COLLAPSE_Z",
    "FINAL_FRACTION",
    "FORMAT_DROP",
    "LASTING_EVALS",
    "Drop",
    "Z",
    "across_seeds",
    "format_fall_step",
    "mean_se",
    "paired_difference",
    "paired_row",
    "peak_drop",
    "seed_effect",
    "select_best",
    "stability_variance",
]

FINAL_FRACTION = 0.2
# A difference counts when it exceeds this many standard errors (about 95% two-sided).
Z = 2.0
# A fall of the valid-format ratio that counts: the collapse detector's.
FORMAT_DROP = CollapseDetector.format_drop
# A collapse of held-out success: a drop from the peak evaluation beyond this many paired
# standard errors. More than Z: the peak is the highest of several evaluations, so its own
# noise pushes it up and the drop from it is biased upward by about one standard error.
COLLAPSE_Z = 3.0
# ... that lasts: through the last evaluation, over at least this many evaluations.
LASTING_EVALS = 2
T = TypeVar("T")


def mean_se(by_seed: Sequence[Sequence[float]]) -> tuple[float, float]:
    """Mean of all values and its standard error (see the module docs); NaN when empty.

    >>> [round(x, 4) for x in mean_se([[1, 0, 1, 0]])]
    [0.5, 0.2887]
    >>> mean_se([[1, 1, 1, 1], [0, 0, 0, 0]])[1]  # the seeds disagree: their spread counts
    0.5
    """
    groups = [np.asarray(g, dtype=float) for g in by_seed if len(g)]
    if not groups:
        return math.nan, math.nan
    values = np.concatenate(groups)
    mean = float(values.mean())
    se = float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else math.nan
    if len(groups) > 1:
        means = np.array([g.mean() for g in groups])
        se = max(se, float(means.std(ddof=1) / math.sqrt(means.size)))
    return mean, se


def paired_difference(
    a: Mapping[tuple[int, int], float], b: Mapping[tuple[int, int], float]
) -> tuple[float, float, int]:
    """Mean and standard error of ``a − b`` over the (seed, level) episodes both have, and
    how many those are. Pairing removes the levels' difficulty from the comparison: both
    runs of a seed played the same levels from the same sampling streams.

    >>> mean, se, n = paired_difference({(0, 1): 1.0, (0, 2): 1.0, (0, 3): 0.0},
    ...                                 {(0, 1): 1.0, (0, 2): 0.0, (0, 3): 0.0, (0, 4): 1.0})
    >>> round(mean, 4), round(se, 4), n
    (0.3333, 0.3333, 3)
    """
    common = sorted(set(a) & set(b))
    by_seed: dict[int, list[float]] = {}
    for key in common:
        by_seed.setdefault(key[0], []).append(a[key] - b[key])
    mean, se = mean_se(list(by_seed.values()))
    return mean, se, len(common)


def stability_variance(values: Sequence[float], fraction: float = FINAL_FRACTION) -> float:
    """Population variance of the last ``fraction`` of ``values`` (per-step success), over at
    least two values; NaN with fewer than two.

    >>> round(stability_variance([0.0] * 8 + [0.5, 0.7]), 6)
    0.01
    """
    if len(values) < 2:
        return math.nan
    window = max(2, math.ceil(fraction * len(values)))
    return float(np.var(np.asarray(values[-window:], dtype=float)))


def _last_run(flags: Sequence[tuple[int, bool]]) -> int | None:
    """The first step of the run of ``True`` that lasts to the last step, or ``None``."""
    first = None
    for step, flag in flags:
        first = (step if first is None else first) if flag else None
    return first


@dataclass(frozen=True)
class Drop:
    """A held-out curve's fall from its peak: ``peak`` (mean success) at ``peak_step``,
    ``last`` at the last evaluation, ``drop`` = peak − last ± ``se`` (the standard error of
    the paired difference on the same levels), and ``step``: the first evaluation of a drop
    beyond ``z`` paired standard errors that lasts (see :func:`peak_drop`), else ``None``."""

    peak_step: int
    peak: float
    last: float
    drop: float
    se: float
    step: int | None


def _level_mean(values: Mapping[int, float]) -> float:
    return sum(values.values()) / max(len(values), 1)


def peak_drop(curve: Mapping[int, Mapping[int, float]], z: float = COLLAPSE_Z,
              lasting: int = LASTING_EVALS) -> Drop | None:
    """The fall of a held-out curve (``{step: {level: success}}``) from its peak evaluation
    (the first of the highest, step 0 included) to its last. Its ``step`` is set when, from
    some evaluation after the peak through the last, and over at least ``lasting``
    evaluations, success stays below the peak's by more than ``z`` standard errors of the
    paired difference on the same levels: a collapse. ``None`` without two evaluations.

    >>> start = {level: float(level < 6) for level in range(8)}
    >>> none, one = {k: 0.0 for k in range(8)}, {k: float(k < 1) for k in range(8)}
    >>> peak_drop({0: start, 2: none, 4: start}).step is None  # it came back
    True
    >>> drop = peak_drop({0: start, 2: start, 4: none, 6: one}, z=2)
    >>> drop.peak_step, drop.drop, drop.step
    (0, 0.625, 4)
    >>> peak_drop({0: start, 2: start, 4: start, 6: none}, z=2).step is None  # once: no
    True
    """
    steps = sorted(curve)
    if len(steps) < 2:
        return None
    peak_step = max(steps, key=lambda s: (_level_mean(curve[s]), -s))
    peak = {(0, level): value for level, value in curve[peak_step].items()}

    def fell(step: int) -> bool:
        now = {(0, level): value for level, value in curve[step].items()}
        mean, se, n = paired_difference(now, peak)
        return n > 1 and mean + z * se < 0

    after = [s for s in steps if s > peak_step]
    first = _last_run([(s, fell(s)) for s in after])
    if first is not None and sum(1 for s in after if s >= first) < lasting:
        first = None
    last = {(0, level): value for level, value in curve[steps[-1]].items()}
    mean, se, _ = paired_difference(last, peak)
    return Drop(peak_step, _level_mean(curve[peak_step]), _level_mean(curve[steps[-1]]),
                0.0 - mean if steps[-1] != peak_step else 0.0,
                se if steps[-1] != peak_step else 0.0, first)


def seed_effect(values: Mapping[int, tuple[float, float]],
                reference: Mapping[int, tuple[float, float]]) -> tuple[float, float, int]:
    """The effect ``values − reference`` paired by seed (each ``{seed: (value, se)}``): its
    mean, its standard error, and how many seeds it pairs. With several seeds the standard
    error is the seeds' spread (it carries the runs' own noise as well as training's); with
    one, the two runs' own errors combined.

    >>> mean, se, n = seed_effect({0: (0.3, 0.1), 1: (0.5, 0.1)},
    ...                           {0: (0.1, 0.1), 1: (0.1, 0.1), 2: (0.0, 0.0)})
    >>> round(mean, 6), round(se, 6), n
    (0.3, 0.1, 2)
    >>> [round(x, 6) for x in seed_effect({0: (0.3, 0.03)}, {0: (0.1, 0.04)})]
    [0.2, 0.05, 1]
    """
    seeds = sorted(set(values) & set(reference))
    if not seeds:
        return math.nan, math.nan, 0
    diffs = np.array([values[s][0] - reference[s][0] for s in seeds])
    if len(seeds) > 1:
        return float(diffs.mean()), float(diffs.std(ddof=1) / math.sqrt(len(seeds))), len(seeds)
    (seed,) = seeds
    return float(diffs[0]), math.hypot(values[seed][1], reference[seed][1]), 1


def format_fall_step(ratios: Mapping[int, float], drop: float = FORMAT_DROP) -> int | None:
    """The first step from which the valid-format ratio stays more than ``drop`` below its
    step-0 value, through the last step (``ratios``: ``{step: ratio}``); ``None`` otherwise.

    >>> format_fall_step({0: 0.98, 2: 0.8, 4: 0.95, 6: 0.7, 8: 0.5})
    6
    """
    if 0 not in ratios:
        return None
    return _last_run([(step, ratios[step] < ratios[0] - drop)
                      for step in sorted(ratios) if step > 0])


def select_best(candidates: Sequence[T], *, success: Callable[[T], float],
                stable: Callable[[T], bool]) -> T | None:
    """The stable candidate of highest ``success`` (the first of equals; a NaN success, a run
    without the evaluation read, never wins), or ``None`` when no candidate is stable.

    >>> select_best([("a", 0.9, False), ("b", 0.6, True), ("c", 0.7, True)],
    ...             success=lambda c: c[1], stable=lambda c: c[2])
    ('c', 0.7, True)
    >>> select_best([("a", math.nan, True), ("b", 0.6, True)],
    ...             success=lambda c: c[1], stable=lambda c: c[2])
    ('b', 0.6, True)
    """
    best = None
    for candidate in candidates:
        if not stable(candidate) or math.isnan(success(candidate)):
            continue
        if best is None or success(candidate) > success(best):
            best = candidate
    return best


def paired_row(row: dict[str, Any]) -> dict[str, Any]:
    """A ``compare.json`` row (``arlarena train compare``) as its success, its paired
    difference against the start (the file's first row) and that difference's z."""
    se = row["success_diff_se"]
    return {"success": row["success"], "se": row["success_se"], "diff": row["success_diff"],
            "diff_se": se, "z": row["success_diff"] / se if se else 0.0,
            "episodes": row["episodes"]}


def across_seeds(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per method, the spread of its runs' paired differences over training seeds: labels
    ``METHOD/seedK`` group by ``METHOD``; the mean difference, its SD across seeds and the SE
    of that mean (SD / sqrt(seeds)), beside the mean of the runs' paired SEs (evaluation noise
    only). Labels without a ``/`` are left out.

    >>> r = across_seeds({"GRPO/seed0": {"diff": 0.1, "diff_se": 0.02},
    ...                   "GRPO/seed1": {"diff": 0.3, "diff_se": 0.02}})
    >>> g = r["GRPO"]; round(g["diff"], 3), round(g["seed_sd"], 3), round(g["seed_se"], 3)
    (0.2, 0.141, 0.1)
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for label, row in rows.items():
        method, sep, _ = label.partition("/")
        if sep:
            groups.setdefault(method, []).append(row)
    out = {}
    for method, runs in groups.items():
        diffs = [r["diff"] for r in runs]
        mean = sum(diffs) / len(diffs)
        sd = (sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)) ** 0.5 if len(diffs) > 1 \
            else float("nan")
        out[method] = {"diff": mean, "seed_sd": sd, "seed_se": sd / len(diffs) ** 0.5,
                       "paired_se": sum(r["diff_se"] for r in runs) / len(runs),
                       "seeds": len(diffs)}
    return out
