"""Loss aggregation: how a (batch, tokens) per-token loss becomes one scalar.

Holds :data:`AGG_MODES`, :func:`aggregate_loss` (the one aggregation every loss uses) and
:func:`aggregation_denominator` (for splitting a mini-batch into micro-batches).
Formulas: ``docs/algorithms.md`` §1.
"""

from __future__ import annotations

from torch import Tensor

__all__ = ["AGG_MODES", "aggregate_loss", "aggregation_denominator"]

AGG_MODES: tuple[str, ...] = (
    "token-mean",
    "seq-mean-token-mean",
    "seq-mean-token-sum",
    "seq-mean-token-sum-norm",
)


def _check_mode(mode: str) -> None:
    if mode not in AGG_MODES:
        raise ValueError(f"unknown aggregation mode {mode!r}; known: {', '.join(AGG_MODES)}")


def aggregation_denominator(mask: Tensor, mode: str = "token-mean") -> Tensor:
    """The count ``aggregate_loss`` divides by: valid tokens, or non-empty sequences.

    To accumulate gradients over micro-batches of one update mini-batch, scale each
    micro-batch loss by ``aggregation_denominator(micro_mask) / total`` where ``total`` is
    the sum of the micro-batch denominators; the result equals the mini-batch loss.

    Args:
        mask: (batch, tokens) response mask.
        mode: one of :data:`AGG_MODES`.

    Returns:
        A 0-dim float tensor (0 for an all-zero mask).
    """
    _check_mode(mode)
    m = mask.float()
    if mode == "token-mean":
        return m.sum()
    return (m.sum(-1) > 0).float().sum()


def aggregate_loss(
    loss_mat: Tensor, mask: Tensor, mode: str = "token-mean", L: int | float | None = None
) -> Tensor:
    """Reduce a per-token loss to a scalar with one of :data:`AGG_MODES`.

    ``token-mean`` divides the masked sum by the number of valid tokens; the ``seq-mean-*``
    modes average per-sequence values over ``B`` = sequences with at least one valid token
    (empty rows do not count). ``seq-mean-token-sum-norm`` (Dr. GRPO, Liu et al. 2025)
    divides each sequence sum by the constant ``L`` (default: the padded length). An all-zero
    mask gives 0, still attached to the graph of ``loss_mat`` (no NaN).

    Args:
        loss_mat: (batch, tokens) per-token loss.
        mask: (batch, tokens) 0/1 response mask (bool or float).
        mode: one of :data:`AGG_MODES`.
        L: the normalising length of ``seq-mean-token-sum-norm``.

    >>> import torch
    >>> loss = torch.tensor([[1.0, 3.0], [5.0, 0.0]])
    >>> mask = torch.tensor([[1, 1], [1, 0]])
    >>> float(aggregate_loss(loss, mask, "token-mean")), float(aggregate_loss(
    ...     loss, mask, "seq-mean-token-mean"))
    (3.0, 3.5)
    """
    _check_mode(mode)
    m = mask.to(loss_mat.dtype)
    masked = loss_mat * m
    if mode == "token-mean":
        return masked.sum() / m.sum().clamp_min(1.0)
    tokens = m.sum(-1)
    seq = masked.sum(-1)
    if mode == "seq-mean-token-mean":
        seq = seq / tokens.clamp_min(1.0)
    elif mode == "seq-mean-token-sum-norm":
        seq = seq / float(L if L is not None else loss_mat.shape[-1])
    num_seqs = (tokens > 0).to(loss_mat.dtype).sum()
    return seq.sum() / num_seqs.clamp_min(1.0)
