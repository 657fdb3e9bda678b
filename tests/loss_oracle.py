"""A method's full actor loss and its gradients, in numpy, straight from ``docs/algorithms.md``.

The independent oracle of the method tests (``tests/test_algos_methods.py``) and of the
OpenRLHF plug-in's (``tests/test_openrlhf_plugin.py``): it shares no code with
``arlarena_baselines.algos``, reads a :class:`~arlarena_baselines.algos.Method`'s fields only
(its parts and settings, never ``policy_loss_config``) and writes each formula per token,
with its derivative by hand:

- the sequence mask (``_SM``): drop sample i when A_i < 0 and (1/T_i) Σ_t m log(πold/πθ) > δ;
- PPO clip ℓ = max(−A w, −A clip(w, 1−ε_low, 1+ε_high)), then min(ℓ, −c A) for A < 0;
  GSPO the same on s_i = exp((1/T_i) Σ_t m log w) (log s ≤ 10), whose derivative by each
  token's log πθ is s_i in the token form; CISPO ℓ = −clip(w) A log πθ with the weight
  constant; SAPO ℓ = −(4/τ) σ(τ (w − 1)) A with τ = τ_pos for A > 0, else τ_neg;
- aggregation: ``token-mean`` Σ ℓ m / Σ m, ``seq-mean-token-mean`` (1/B) Σ_i Σ_t ℓ m / T_i;
- + β · agg_r(k3) − entropy_coef · agg_r(H), aggregated over the unmasked response.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Expected", "expected_loss"]

LOG_RATIO_CLAMP = 20.0
GSPO_LOG_RATIO_MAX = 10.0


@dataclass(frozen=True)
class Expected:
    """The loss, its gradient by log πθ and by the entropies, and the sequences masked."""

    loss: float
    grad: np.ndarray
    entropy_grad: np.ndarray | None
    seqs_masked: int


def _weights(mask: np.ndarray, mode: str) -> np.ndarray:
    """W with agg(ℓ) = Σ W ℓ: the aggregation as a weight on each token."""
    if mode == "token-mean":
        return mask / max(mask.sum(), 1.0)
    if mode == "seq-mean-token-mean":
        tokens = mask.sum(-1, keepdims=True)
        rows = max(float((tokens > 0).sum()), 1.0)
        return mask / np.maximum(tokens, 1.0) / rows
    raise ValueError(f"the oracle has no aggregation {mode!r}")


def _clip_surrogate(ratio: np.ndarray, slope: np.ndarray, adv: np.ndarray, low: float,
                    high: float) -> tuple[np.ndarray, np.ndarray]:
    """ℓ = max(−A r, −A clip(r)) and dℓ/dlog πθ (``slope`` = dr/dlog πθ; 0 where the clip
    term is the larger)."""
    plain, clipped = -adv * ratio, -adv * np.clip(ratio, 1.0 - low, 1.0 + high)
    return np.maximum(plain, clipped), np.where(plain >= clipped, -adv * slope, 0.0)


def _policy_term(method, log_prob, old, adv, mask) -> tuple[np.ndarray, np.ndarray]:
    """The per-token loss ℓ of the method's clipping and dℓ/dlog πθ."""
    ratio = np.exp(np.clip(log_prob - old, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))
    low, high = method.clip_low, method.clip_high
    if method.clipping == "ppo_clip":
        loss, grad = _clip_surrogate(ratio, ratio, adv, low, high)
        if method.dual_clip is not None:
            cap = -method.dual_clip * adv
            capped = (adv < 0) & (loss > cap)
            loss, grad = np.where(capped, cap, loss), np.where(capped, 0.0, grad)
        return loss, grad
    if method.clipping == "gspo":
        tokens = np.maximum(mask.sum(-1, keepdims=True), 1.0)
        mean = (np.log(ratio) * mask).sum(-1, keepdims=True) / tokens
        seq = np.exp(np.minimum(mean, GSPO_LOG_RATIO_MAX)) * np.ones_like(ratio)
        return _clip_surrogate(seq, seq * (mean <= GSPO_LOG_RATIO_MAX), adv, low, high)
    if method.clipping == "cispo":
        weight = np.clip(ratio, 1.0 - low, 1.0 + high)
        return -weight * adv * log_prob, -weight * adv
    if method.clipping == "sapo":
        tau = np.where(adv > 0, method.tau_pos, method.tau_neg)
        gate = 1.0 / (1.0 + np.exp(-tau * (ratio - 1.0)))
        return -4.0 / tau * gate * adv, -4.0 * gate * (1.0 - gate) * ratio * adv
    raise ValueError(f"the oracle has no clipping {method.clipping!r}")


def expected_loss(method, log_prob, old_log_prob, advantages, mask, ref_log_prob=None,
                  entropy=None) -> Expected:
    """What ``method_policy_loss(method, ...)`` must give on these (batch, tokens) arrays
    (``advantages`` (batch,) or (batch, tokens))."""
    log_prob, old, mask = (np.asarray(x, dtype=np.float64)
                           for x in (log_prob, old_log_prob, mask))
    adv = np.asarray(advantages, dtype=np.float64)
    adv = np.broadcast_to(adv[:, None] if adv.ndim == 1 else adv, log_prob.shape)
    tokens = np.maximum(mask.sum(-1), 1.0)
    loss_mask, masked = mask, 0
    if method.sequence_mask:
        seq_adv = (adv * mask).sum(-1) / tokens
        drift = ((old - log_prob) * mask).sum(-1) / tokens
        drop = (seq_adv < 0) & (drift > method.delta) & (mask.sum(-1) > 0)
        loss_mask, masked = mask * ~drop[:, None], int(drop.sum())
    token_loss, token_grad = _policy_term(method, log_prob, old, adv, loss_mask)
    weights = _weights(loss_mask, method.aggregation)
    loss, grad = float((token_loss * weights).sum()), token_grad * weights
    reg = _weights(mask, method.regularizer_aggregation or method.aggregation)
    if ref_log_prob is not None:
        assert method.kl_estimator == "k3", "the oracle writes out the k3 estimator only"
        delta = np.asarray(ref_log_prob, dtype=np.float64) - log_prob
        loss += method.kl_coef * float(((np.exp(delta) - delta - 1.0) * reg).sum())
        grad = grad + method.kl_coef * (1.0 - np.exp(delta)) * reg
    entropy_grad = None
    if entropy is not None:
        loss -= method.entropy_coef * float((np.asarray(entropy, dtype=np.float64) * reg).sum())
        entropy_grad = -method.entropy_coef * reg
    return Expected(loss, grad, entropy_grad, masked)
