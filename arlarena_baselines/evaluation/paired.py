"""Comparing two policies on the same episodes: means, standard errors, the paired difference.

Holds :class:`PairedComparison` and :func:`paired_comparison`. When both policies play the same
tasks with the same random streams, the per-task difference cancels what the tasks share (easy
and hard levels), so its standard error is the one that says whether a change is real.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["PairedComparison", "paired_comparison"]


@dataclass(frozen=True)
class PairedComparison:
    """``b`` against ``a`` on ``n`` shared tasks.

    Attributes:
        n: tasks both have a value for.
        mean_a, mean_b: the means; ``se_a``, ``se_b`` their standard errors.
        diff: ``mean_b - mean_a``; ``se_diff`` the standard error of the paired difference.
    """

    n: int
    mean_a: float
    se_a: float
    mean_b: float
    se_b: float
    diff: float
    se_diff: float

    @property
    def z(self) -> float:
        """``diff / se_diff`` (inf when the difference is exact and non-zero)."""
        if self.se_diff == 0:
            return 0.0 if self.diff == 0 else math.copysign(math.inf, self.diff)
        return self.diff / self.se_diff


def _mean_se(values: list[float]) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def paired_comparison(a: Mapping[str, float], b: Mapping[str, float]) -> PairedComparison:
    """Compare per-task values ``a`` and ``b`` (task id -> value) on the tasks they share.

    >>> c = paired_comparison({"t1": 1, "t2": 0, "t3": 1}, {"t1": 1, "t2": 1, "t3": 1})
    >>> c.n, round(c.diff, 3), round(c.se_diff, 3)
    (3, 0.333, 0.333)
    """
    shared = sorted(set(a) & set(b))
    if not shared:
        raise ValueError("the two results share no task")
    mean_a, se_a = _mean_se([float(a[k]) for k in shared])
    mean_b, se_b = _mean_se([float(b[k]) for k in shared])
    diff, se_diff = _mean_se([float(b[k]) - float(a[k]) for k in shared])
    return PairedComparison(len(shared), mean_a, se_a, mean_b, se_b, diff, se_diff)
