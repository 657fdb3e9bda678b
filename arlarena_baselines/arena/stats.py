"""The arena's statistics: means with standard errors, paired differences, stability, selection.

Holds :func:`mean_se`, :func:`paired_difference`, :func:`stability_variance` (the study's
criterion, §3.1: the variance of success over the final 20% of steps) and :func:`select_best`
(the study's per-method grid search: the best configuration among the stable ones).

Outcomes come grouped by seed (one list of per-episode values per training seed). With one
seed the standard error is the episodes' (binomial for success); with several it is the larger
of that and the standard error across the seeds' means, so that a claim carries the
run-to-run noise of training as well as the noise of the held-out levels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np

__all__ = [
    "FINAL_FRACTION",
    "mean_se",
    "paired_difference",
    "select_best",
    "stability_variance",
]

FINAL_FRACTION = 0.2
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


def select_best(candidates: Sequence[T], *, success: Callable[[T], float],
                stable: Callable[[T], bool]) -> T | None:
    """The stable candidate of highest ``success`` (the first of equals), or ``None`` when no
    candidate is stable.

    >>> select_best([("a", 0.9, False), ("b", 0.6, True), ("c", 0.7, True)],
    ...             success=lambda c: c[1], stable=lambda c: c[2])
    ('c', 0.7, True)
    """
    best = None
    for candidate in candidates:
        if stable(candidate) and (best is None or success(candidate) > success(best)):
            best = candidate
    return best
