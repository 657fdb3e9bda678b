"""KL penalty to the reference policy, per token.

Holds :data:`KL_ESTIMATORS` and :func:`kl_penalty` with Schulman's estimators ``k1``, ``k2``
and ``k3`` (http://joschu.net/blog/kl-approx.html). Formula: ``docs/algorithms.md``,
"Regularisers shared by all methods".
"""

from __future__ import annotations

from torch import Tensor

__all__ = ["K3_CLAMP", "KL_ESTIMATORS", "kl_penalty"]

K3_CLAMP = 10.0
_DELTA_CLAMP = 20.0  # keeps exp(δ) finite; k3 saturates at K3_CLAMP well before |δ| = 20

KL_ESTIMATORS: tuple[str, ...] = ("k1", "k2", "k3")


def kl_penalty(log_prob: Tensor, ref_log_prob: Tensor, estimator: str = "k3") -> Tensor:
    """Per-token estimate of KL(πθ ‖ π_ref) from samples of πθ.

    - ``k1`` = log πθ − log π_ref;
    - ``k2`` = ½ (log πθ − log π_ref)²;
    - ``k3`` = e^δ − δ − 1 with δ = log π_ref − log πθ, clamped to [−10, 10]
      (always ≥ 0; the study's choice, β = 0.01).

    Args:
        log_prob: (batch, tokens) log πθ of the sampled tokens (carries the gradient).
        ref_log_prob: (batch, tokens) log π_ref of the same tokens (detached).
        estimator: ``k1``, ``k2`` or ``k3``.

    Returns:
        (batch, tokens); aggregate it with
        :func:`~arlarena_baselines.algos.aggregation.aggregate_loss`.

    >>> import torch
    >>> round(float(kl_penalty(torch.tensor([0.0]), torch.tensor([1.0]))), 4)  # e - 2
    0.7183
    """
    log_ref = ref_log_prob.detach()
    if estimator == "k1":
        return log_prob - log_ref
    if estimator == "k2":
        return 0.5 * (log_prob - log_ref).square()
    if estimator == "k3":
        delta = (log_ref - log_prob).clamp(-_DELTA_CLAMP, _DELTA_CLAMP)
        return (delta.exp() - delta - 1.0).clamp(-K3_CLAMP, K3_CLAMP)
    raise ValueError(f"unknown KL estimator {estimator!r}; known: {', '.join(KL_ESTIMATORS)}")
