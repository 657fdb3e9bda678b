"""What a trainer calls: a :class:`~.methods.Method`'s parts composed, with no name branches.

Holds :func:`compute_advantages` (the method's advantage estimator on a batch of step
samples), :func:`method_policy_loss` (sequence mask if the method asks, its policy loss and
aggregation, plus the KL and entropy regularisers) and :func:`make_sampler` (the method's
trajectory filter as a :class:`~.filtering.DynamicSampler` for one step).

A training step reads like the algorithm box::

    method = get_method("SAMPO")
    sampler = make_sampler(method, target_groups=16, step=step)
    ...                                   # roll out until sampler.done, keep what add() keeps
    adv = compute_advantages(method, episode_scores=..., group_ids=..., traj_ids=...,
                             steps=..., step_rewards=..., anchors=..., entropies=...)
    loss, metrics = method_policy_loss(method, log_prob, old_log_prob, adv, mask,
                                       ref_log_prob=ref_log_prob, entropy=entropy)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from . import metric_names as mn
from .advantage import ADVANTAGE_ESTIMATORS, AdvantageInputs
from .aggregation import aggregate_loss
from .clipping import POLICY_LOSSES, sequence_mask
from .filtering import FILTERS, DynamicSampler, overlong_penalty
from .grouping import Ids, Values, as_values
from .kl import kl_penalty
from .methods import Method, get_method

__all__ = ["compute_advantages", "make_sampler", "method_policy_loss"]


def _resolve(method: Method | str) -> Method:
    return get_method(method) if isinstance(method, str) else method


def compute_advantages(
    method: Method | str,
    *,
    episode_scores: Values,
    group_ids: Ids,
    traj_ids: Ids | None = None,
    steps: Tensor | Sequence[int] | None = None,
    step_rewards: Values | None = None,
    anchors: Sequence[str] | Ids | None = None,
    entropies: Values | None = None,
    response_lengths: Sequence[int] | Tensor | None = None,
) -> Tensor:
    """(N,) advantages of the step samples with ``method``'s registered estimator.

    Every argument is one value per step sample. ``episode_scores`` and ``group_ids`` are
    always needed; GiGPO also needs ``traj_ids``, ``steps``, ``step_rewards`` and
    ``anchors``; EMPG ``traj_ids``, ``steps`` and ``entropies`` (mean token entropy of each
    response). A missing one raises a ``ValueError`` naming it. With ``overlong_max_len`` set,
    each sample's score gets DAPO's overlong penalty of its response length (the study's DAPO
    reward manager), so ``response_lengths`` is needed too.
    """
    m = _resolve(method)
    if m.overlong_max_len is not None:
        if response_lengths is None:
            raise ValueError(f"{m.name}'s overlong penalty needs response_lengths")
        length = m.overlong_max_len
        penalty = overlong_penalty(response_lengths, length, buffer_len=length // 5).numpy()
        episode_scores = as_values(episode_scores) + penalty
    inputs = AdvantageInputs(
        episode_scores=episode_scores,
        group_ids=group_ids,
        traj_ids=traj_ids,
        steps=steps,
        step_rewards=step_rewards,
        anchors=anchors,
        entropies=entropies,
    )
    return ADVANTAGE_ESTIMATORS[m.advantage](inputs, m)


def method_policy_loss(
    method: Method | str,
    log_prob: Tensor,
    old_log_prob: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    ref_log_prob: Tensor | None = None,
    entropy: Tensor | None = None,
) -> tuple[Tensor, dict[str, float]]:
    """The full actor loss of ``method`` and its metrics.

    loss = agg(ℓ_clip, m') + kl_coef · agg_r(KL(πθ‖π_ref), m) − entropy_coef · agg_r(H, m),
    where m' is ``mask`` after the method's sequence mask (if it uses one), ℓ_clip its
    registered policy loss, agg its aggregation, agg_r that of its regularisers; the KL
    term needs ``ref_log_prob``, the entropy term ``entropy`` (per-token entropies carrying
    a gradient). ``SEQS_MASKED`` counts the
    sequences the mask dropped (0 for methods without one).

    Args:
        log_prob, old_log_prob: (batch, tokens).
        advantages: (batch, tokens), or (batch,) one value per sample.
        mask: (batch, tokens) response mask.
    """
    m = _resolve(method)
    config = m.policy_loss_config()
    loss_mask = mask
    if m.sequence_mask:
        loss_mask = sequence_mask(log_prob, old_log_prob, advantages, mask, m.delta)
    loss, metrics = POLICY_LOSSES[m.clipping](log_prob, old_log_prob, advantages, loss_mask, config)
    with torch.no_grad():
        rows = mask.sum(-1) > 0
        dropped = float((rows & (loss_mask.sum(-1) == 0)).sum()) if m.sequence_mask else 0.0
        metrics[mn.SEQS_MASKED] = dropped
        metrics[mn.SEQS_MASKED_FRAC] = dropped / max(float(rows.sum()), 1.0)
    if ref_log_prob is not None:
        kl_mat = kl_penalty(log_prob, ref_log_prob, m.kl_estimator)
        kl = aggregate_loss(kl_mat, mask, m.reg_aggregation, m.agg_len)
        loss = loss + m.kl_coef * kl
        metrics[mn.KL_LOSS] = float(kl.detach())
    if entropy is not None:
        ent = aggregate_loss(entropy, mask, m.reg_aggregation, m.agg_len)
        loss = loss - m.entropy_coef * ent
        metrics[mn.ENTROPY] = float(ent.detach())
    metrics[mn.TOTAL_LOSS] = float(loss.detach())
    return loss, metrics


def make_sampler(method: Method | str, target_groups: int, step: int = 0) -> DynamicSampler:
    """The trajectory-filter bookkeeping of ``method`` for training step ``step``.

    Filtering is off (every group kept, one round) for methods without a filter and during
    the method's first ``cold_start_steps`` steps; otherwise its registered filter runs for
    up to ``max_num_gen_batches`` generation rounds, the last one topped up with rejected
    groups when the method's ``top_up`` is on.
    """
    m = _resolve(method)
    if m.filtering is None or step < m.cold_start_steps:
        return DynamicSampler(target_groups, 1, filter_fn=None)
    return DynamicSampler(target_groups, m.max_num_gen_batches, filter_fn=FILTERS[m.filtering],
                          top_up=m.top_up)
