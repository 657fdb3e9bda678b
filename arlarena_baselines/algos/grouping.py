"""Vectorised group bookkeeping shared by the advantage estimators and the filters.

Holds:

- :data:`Ids` and :data:`Values`: what an id column and a value column may be;
- :func:`group_index`: ids → dense codes 0..G−1 in order of first appearance;
- :func:`as_values` / :func:`to_output`: columns in and out (float64 numpy inside);
- :func:`group_stats` and :func:`normalize_in_groups`: per-group mean / std;
- :func:`trajectory_order` and :func:`next_turn_values`: walking the turns of trajectories
  whose step samples come in any order.

Ids may be a 1-D tensor, a numpy array, or a list / tuple of hashable values (str, int,
tuples, …). These columns hold one value per step sample (thousands, not millions), so the
work runs in numpy (``bincount``, ``unique``), which is much cheaper than torch for small
arrays; the only Python loop is the hashing of non-numeric ids.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "Ids",
    "Values",
    "as_values",
    "group_index",
    "group_stats",
    "next_turn",
    "next_turn_values",
    "normalize_in_groups",
    "to_output",
    "trajectory_order",
]

Ids = Tensor | np.ndarray | Sequence[Hashable]
Values = Tensor | np.ndarray | Sequence[float]


def as_values(values: Values) -> np.ndarray:
    """A 1-D float64 numpy copy of ``values`` (float64 keeps group statistics finite)."""
    if isinstance(values, Tensor):
        return values.detach().cpu().numpy().astype(np.float64).reshape(-1)
    return np.asarray(values, dtype=np.float64).reshape(-1)


def to_output(values: np.ndarray, like: object) -> Tensor:
    """``values`` as a tensor: dtype and device of ``like`` if it is a floating tensor, else
    float32 on the CPU."""
    out = torch.from_numpy(np.ascontiguousarray(values))
    if isinstance(like, Tensor) and like.is_floating_point():
        return out.to(like.device, like.dtype)
    return out.to(torch.float32)


def group_index(ids: Ids) -> tuple[np.ndarray, int]:
    """Dense int64 codes (N,) numbering the distinct ids by first appearance, and their count.

    >>> group_index(["b", "a", "b"])
    (array([0, 1, 0]), 2)
    >>> group_index(torch.tensor([7, 3, 7]))
    (array([0, 1, 0]), 2)
    """
    if isinstance(ids, Tensor):
        ids = ids.detach().cpu().numpy()
    if isinstance(ids, np.ndarray) and ids.dtype.kind in "biuf":
        flat = ids.reshape(-1)
        _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
        rank = np.empty(first.size, dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(first.size)
        return rank[inverse.reshape(-1)], int(first.size)
    table: dict[Hashable, int] = {}
    codes = [table.setdefault(x, len(table)) for x in ids]
    return np.asarray(codes, dtype=np.int64), len(table)


def group_stats(
    values: np.ndarray, codes: np.ndarray, num_groups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-group count, mean and unbiased std (0 for a group of one), each (G,).

    Args:
        values: (N,) float64.
        codes: (N,) int group codes in ``[0, num_groups)``.
    """
    count = np.bincount(codes, minlength=num_groups).astype(np.float64)
    mean = np.bincount(codes, weights=values, minlength=num_groups) / np.maximum(count, 1.0)
    sq = np.bincount(codes, weights=np.square(values - mean[codes]), minlength=num_groups)
    std = np.sqrt(sq / np.maximum(count - 1.0, 1.0))
    return count, mean, std


def normalize_in_groups(
    values: np.ndarray, codes: np.ndarray, num_groups: int, *, norm_by_std: bool, eps: float
) -> np.ndarray:
    """(x − mean_group) / (std_group + eps), or without the division; a group of one gets 0.

    Args:
        values: (N,) float64.
        codes: (N,) int group codes.
    """
    count, mean, std = group_stats(values, codes, num_groups)
    centred = values - mean[codes]
    if norm_by_std:
        centred = centred / (std[codes] + eps)
    return np.where(count[codes] > 1, centred, 0.0)


def trajectory_order(traj_codes: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """A permutation (N,) that sorts samples by trajectory, then by step."""
    return np.lexsort((steps, traj_codes))


def next_turn(values: np.ndarray, traj_codes: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Numpy core of :func:`next_turn_values`, on trajectory codes."""
    order = trajectory_order(traj_codes, steps)
    nxt = np.full_like(values, np.nan)
    same = traj_codes[order][1:] == traj_codes[order][:-1]
    nxt[order[:-1]] = np.where(same, values[order][1:], np.nan)
    return nxt


def next_turn_values(values: Values, traj_ids: Ids, steps: Values) -> Tensor:
    """For each step sample, ``values`` of the next turn of its trajectory (NaN for the last).

    The next turn is the sample of the same trajectory with the next larger step; samples
    may come in any order. Returns float32 (or the dtype / device of a floating tensor).

    >>> next_turn_values([1.0, 2.0, 3.0], ["a", "a", "b"], [1, 0, 0])
    tensor([nan, 1., nan])
    """
    nxt = next_turn(as_values(values), group_index(traj_ids)[0], as_values(steps))
    return to_output(nxt, values)
