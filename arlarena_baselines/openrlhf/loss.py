"""A method's policy loss in the call and return shape of OpenRLHF's ``PolicyLoss.forward``.

OpenRLHF calls its policy loss once per micro-batch with the global normalisers of the
optimizer step (``batch_num_tokens`` for a token mean, ``global_batch_size`` for a mean over
sequences, both across micro-batches and data-parallel ranks, and ``dp_size``).
:func:`openrlhf_policy_loss` computes the method's loss on the micro-batch with
:func:`~arlarena_baselines.algos.method_policy_loss` (sequence mask, clipping, aggregation)
and rescales it as ARLArena's own trainer weighs micro-batches: by the micro-batch's share of
the step's tokens (or sequences). One OpenRLHF sample is one whole episode, so the
sequence-level parts (GSPO's ratio, ``seq-mean-*`` aggregation, the sequence mask) act on
episodes. GSPO is the paper's token form (as in verl): each token's gradient carries its own
turn's advantage, where OpenRLHF's spreads the episode's mean evenly; the two agree when an
episode has one advantage. The KL and entropy terms stay OpenRLHF's (``--algo.kl.*``,
``--actor.entropy_coef``).
"""

from __future__ import annotations

import torch
from torch import Tensor

from arlarena_baselines.algos import Method, aggregation_denominator, method_policy_loss
from arlarena_baselines.algos import metric_names as mn

__all__ = ["openrlhf_policy_loss"]


def openrlhf_policy_loss(
    method: Method,
    log_probs: Tensor,
    old_log_probs: Tensor,
    advantages: Tensor,
    action_mask: Tensor,
    dp_size: int = 1,
    batch_num_tokens: float | Tensor | None = None,
    global_batch_size: float | Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor, None, None]:
    """``(loss, clip_ratio, ppo_kl, None, None)`` as ``PolicyLoss.forward`` returns them.

    Without the global normalisers the loss is the micro-batch's own (what
    :func:`~arlarena_baselines.algos.method_policy_loss` gives). ``clip_ratio`` is the
    method's clip fraction, ``ppo_kl`` the masked mean of log πold − log πθ; the last two
    (OpenRLHF's vLLM importance-sampling correction) are not supported.

    Args:
        log_probs, old_log_probs, advantages, action_mask: (batch, tokens).
    """
    mask = action_mask.to(log_probs.dtype)
    loss, metrics = method_policy_loss(method, log_probs, old_log_probs, advantages, mask)
    total = batch_num_tokens if method.aggregation == "token-mean" else global_batch_size
    if total is not None:
        local = aggregation_denominator(mask, method.aggregation).to(loss.device)
        loss = loss * local / torch.as_tensor(total, device=loss.device) * dp_size
    with torch.no_grad():
        drift = ((old_log_probs - log_probs) * mask).sum() / mask.sum().clamp_min(1.0)
    clip_ratio = torch.tensor(metrics[mn.CLIP_FRAC], device=loss.device)
    return loss, clip_ratio, drift, None, None
