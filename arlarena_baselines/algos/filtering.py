"""Trajectory filtering and resampling (DAPO, Yu et al. 2025, arXiv 2503.14476).

Holds :func:`dynamic_filter` (drop groups whose episode returns are all equal), the registry
:data:`FILTERS` of such group filters, :class:`DynamicSampler` (the bookkeeping of DAPO's
"sample until the batch is full or ``max_num_gen_batches`` rounds ran", topped up in the last
round as the study does) and :func:`overlong_penalty` (DAPO's optional soft overlong shaping).
Formulas: ``docs/algorithms.md`` §4.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from . import metric_names as mn
from .grouping import Ids, Values, as_values, group_index
from .registry import Registry

__all__ = [
    "FILTERS",
    "DynamicSampler",
    "FilterFn",
    "dynamic_filter",
    "overlong_penalty",
]

FilterFn = Callable[[Ids, Values], Tensor]

FILTERS: Registry[FilterFn] = Registry("trajectory filter")


@FILTERS.register("dapo")
def dynamic_filter(group_ids: Ids, episode_scores: Values) -> Tensor:
    """DAPO dynamic sampling: keep the samples of groups whose episode returns differ.

    A group whose returns are all identical (including a group of one) has zero GRPO
    advantage everywhere and is dropped.

    Args:
        group_ids: (N,) group id of each step sample.
        episode_scores: (N,) episode return of each sample's trajectory.

    Returns:
        (N,) bool keep mask.

    >>> dynamic_filter(["a", "a", "b", "b"], [1.0, 0.0, 1.0, 1.0])
    tensor([ True,  True, False, False])
    """
    scores = as_values(episode_scores)
    codes, num = group_index(group_ids)
    low, high = np.full(num, np.inf), np.full(num, -np.inf)
    np.minimum.at(low, codes, scores)
    np.maximum.at(high, codes, scores)
    return torch.from_numpy((high > low)[codes])


class DynamicSampler:
    """Bookkeeping of DAPO's resampling loop for one training step.

    Feed each generation round's samples to :meth:`add`; it returns which of them to keep:
    those of groups the filter keeps, up to the ``target_groups`` still needed (in order of
    first appearance). Stop when :attr:`done`: the batch is full or ``max_rounds`` rounds
    ran. With ``top_up`` (the study's ``filter_group_data``), the last round fills what is
    still missing with the groups the filter rejected, in order, so the step trains on
    ``target_groups`` groups whenever that many were generated; without it, the step trains
    on what was kept, possibly fewer groups, possibly none. ``filter_fn=None`` keeps every
    group (filtering off, e.g. during a cold start).

    >>> sampler = DynamicSampler(target_groups=3, max_rounds=2)
    >>> sampler.add(["a", "a", "b", "b"], [1.0, 0.0, 1.0, 1.0])
    tensor([ True,  True, False, False])
    >>> sampler.done, sampler.kept_groups, sampler.dropped_groups
    (False, 1, 1)
    >>> sampler.add(["c", "c", "d", "d", "e", "e"], [0.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    tensor([ True,  True,  True,  True, False, False])
    >>> sampler.done, sampler.kept_groups, sampler.topped_up_groups, sampler.dropped_groups
    (True, 3, 1, 2)
    """

    def __init__(
        self,
        target_groups: int,
        max_rounds: int = 3,
        *,
        filter_fn: FilterFn | None = dynamic_filter,
        top_up: bool = True,
    ) -> None:
        if target_groups < 1 or max_rounds < 1:
            raise ValueError("target_groups and max_rounds must be >= 1")
        self.target_groups = target_groups
        self.max_rounds = max_rounds
        self.filter_fn = filter_fn
        self.top_up = top_up
        self.rounds = 0
        self.kept_groups = 0
        self.topped_up_groups = 0
        self.dropped_groups = 0

    @property
    def needed(self) -> int:
        """Groups still missing from the batch."""
        return max(self.target_groups - self.kept_groups, 0)

    @property
    def done(self) -> bool:
        """Whether the batch is full or the round budget is spent."""
        return self.needed == 0 or self.rounds >= self.max_rounds

    def add(self, group_ids: Ids, episode_scores: Values) -> Tensor:
        """Record one generation round; return its (N,) bool keep mask."""
        codes, num = group_index(group_ids)
        if self.filter_fn is None:
            passed = np.ones(codes.size, dtype=bool)
        else:
            passed = np.asarray(self.filter_fn(group_ids, episode_scores), dtype=bool)
        group_passed = np.zeros(num, dtype=bool)
        group_passed[codes[passed]] = True
        # Codes number groups by first appearance, so the first `needed` passing ones win.
        group_keep = group_passed & (np.cumsum(group_passed) <= self.needed)
        rejected = ~group_passed
        group_fill = np.zeros(num, dtype=bool)
        if self.top_up and self.rounds + 1 >= self.max_rounds:
            missing = self.needed - int(group_keep.sum())
            group_fill = rejected & (np.cumsum(rejected) <= missing)
        self.rounds += 1
        self.kept_groups += int(group_keep.sum() + group_fill.sum())
        self.topped_up_groups += int(group_fill.sum())
        self.dropped_groups += int((rejected & ~group_fill).sum())
        return torch.from_numpy((group_keep | group_fill)[codes])

    def metrics(self) -> dict[str, float]:
        """Groups dropped by the filter and groups it rejected that topped the batch up."""
        return {mn.GROUPS_FILTERED: float(self.dropped_groups),
                mn.GROUPS_TOPPED_UP: float(self.topped_up_groups)}


def overlong_penalty(
    lengths: Tensor | Sequence[int],
    max_len: int,
    *,
    buffer_len: int | None = None,
    factor: float = 0.1,
) -> Tensor:
    """DAPO's soft overlong punishment, added to the reward of each response.

    min(−(|y| − (L_max − L_buf)) / L_buf · factor, 0) with L_buf = L_max / 5 by default,
    floored at −factor (the paper's value for |y| > L_max).

    Args:
        lengths: (N,) response lengths |y| in tokens.
        max_len: L_max.

    Returns:
        (N,) float32 penalties in [−factor, 0].

    >>> overlong_penalty([10, 90, 100], 100)
    tensor([ 0.0000, -0.0500, -0.1000])
    """
    buf = float(buffer_len if buffer_len is not None else max_len / 5)
    size = torch.as_tensor(lengths, dtype=torch.float64).reshape(-1)
    penalty = (-(size - (max_len - buf)) / buf * factor).clamp(-factor, 0.0)
    return penalty.to(torch.float32)
