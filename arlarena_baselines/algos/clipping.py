"""Importance-sampling clipping: the policy losses and the sequence mask.

Holds :class:`PolicyLossConfig`, the registry :data:`POLICY_LOSSES` with
:func:`register_policy_loss` / :func:`get_policy_loss`, the built-in losses ``ppo_clip``,
``gspo``, ``cispo`` and ``sapo``, and :func:`sequence_mask` (the ``_SM`` variants).
Formulas: ``docs/algorithms.md`` §2.

Every loss has the signature
``fn(log_prob, old_log_prob, advantages, response_mask, config) -> (loss, metrics)`` with
(batch, tokens) tensors (``advantages`` may also be (batch,), one value per sample), a 0-dim
``loss`` aggregated with ``config.agg``, and ``metrics`` a dict of floats keyed by
:mod:`~arlarena_baselines.algos.metric_names`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from . import metric_names as mn
from .aggregation import AGG_MODES, aggregate_loss
from .registry import Registry

__all__ = [
    "LOG_RATIO_CLAMP",
    "POLICY_LOSSES",
    "PolicyLossConfig",
    "PolicyLossFn",
    "cispo_loss",
    "get_policy_loss",
    "gspo_loss",
    "ppo_clip_loss",
    "register_policy_loss",
    "sapo_loss",
    "sequence_mask",
]

LOG_RATIO_CLAMP = 20.0
GSPO_LOG_RATIO_MAX = 10.0


@dataclass
class PolicyLossConfig:
    """Hyperparameters every policy loss reads (each uses the ones it needs).

    Attributes:
        clip_low, clip_high: ε_low, ε_high of the band [1 − ε_low, 1 + ε_high].
        dual_clip: c > 1 of dual-clip PPO (Ye et al. 2020), or ``None`` for none.
        tau_pos, tau_neg: SAPO gate temperatures for A > 0 and A ≤ 0.
        agg: the aggregation mode (see :data:`~arlarena_baselines.algos.AGG_MODES`).
        agg_len: ``L`` of ``seq-mean-token-sum-norm`` (default: the padded length).
    """

    clip_low: float = 0.2
    clip_high: float = 0.2
    dual_clip: float | None = None
    tau_pos: float = 1.0
    tau_neg: float = 1.05
    agg: str = "token-mean"
    agg_len: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.clip_low <= 1.0 or self.clip_high < 0.0:
            raise ValueError(f"need 0 <= clip_low <= 1 and clip_high >= 0, got {self}")
        if self.dual_clip is not None and self.dual_clip <= 1.0:
            raise ValueError(f"dual_clip must be > 1, got {self.dual_clip}")
        if self.tau_pos <= 0.0 or self.tau_neg <= 0.0:
            raise ValueError(f"SAPO temperatures must be > 0, got {self.tau_pos}, {self.tau_neg}")
        if self.agg not in AGG_MODES:
            raise ValueError(f"unknown aggregation {self.agg!r}; known: {', '.join(AGG_MODES)}")


PolicyLossFn = Callable[
    [Tensor, Tensor, Tensor, Tensor, PolicyLossConfig], tuple[Tensor, dict[str, float]]
]

POLICY_LOSSES: Registry[PolicyLossFn] = Registry("policy loss")


def register_policy_loss(
    name: str, *, override: bool = False
) -> Callable[[PolicyLossFn], PolicyLossFn]:
    """Decorator registering a policy loss under ``name`` (see the module docstring)."""
    return POLICY_LOSSES.register(name, override=override)


def get_policy_loss(name: str) -> PolicyLossFn:
    """The policy loss registered as ``name``; an unknown name lists the known ones."""
    return POLICY_LOSSES[name]


def _token_advantages(advantages: Tensor, like: Tensor) -> Tensor:
    """Detached advantages that broadcast against ``like``: (batch, 1) from (batch,)."""
    adv = advantages.detach().to(like.dtype)
    return adv.unsqueeze(-1) if adv.dim() == 1 else adv


def _log_ratio(log_prob: Tensor, old_log_prob: Tensor) -> Tensor:
    """log w clamped to [−20, 20]. ``hardtanh`` is ``clamp`` with a much cheaper CPU backward."""
    return F.hardtanh(log_prob - old_log_prob.detach(), -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)


def _finish(
    loss_mat: Tensor, mask: Tensor, config: PolicyLossConfig, metrics: dict[str, Tensor]
) -> tuple[Tensor, dict[str, float]]:
    """Aggregate ``loss_mat`` and turn the metric tensors into floats with one sync."""
    loss = aggregate_loss(loss_mat, mask, config.agg, config.agg_len)
    metrics[mn.PG_LOSS] = loss.detach()
    values = torch.stack([v.float() for v in metrics.values()]).tolist()
    return loss, dict(zip(metrics, values, strict=True))


def _sign_parts(adv: Tensor) -> tuple[Tensor, Tensor]:
    """1 where A > 0 (resp. A < 0), else 0, shaped like ``adv``."""
    sign = adv.sign()
    return F.relu(sign), F.relu(-sign)


def _count_by_sign(indicator: Tensor, mask: Tensor, adv: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Σ m·x over the tokens with A > 0, with A < 0, and over all (x a 0/1 indicator).

    With one advantage per sample the rows are summed first (one dot product per row).
    """
    pos, neg = _sign_parts(adv)
    if adv.shape[-1] == 1:
        rows = torch.linalg.vecdot(indicator, mask)
        return (rows * pos.squeeze(-1)).sum(), (rows * neg.squeeze(-1)).sum(), rows.sum()
    masked = indicator * mask
    return (masked * pos).sum(), (masked * neg).sum(), masked.sum()


def _masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    return torch.linalg.vecdot(x, mask).sum() / mask.sum().clamp_min(1.0)


def _band_metrics(ratio: Tensor, clipped: Tensor, adv: Tensor, mask: Tensor) -> dict[str, Tensor]:
    """Ratio mean and out-of-band fractions of the tolerant losses (CISPO, SAPO).

    Lower part: A < 0 and w < 1 − ε_low; upper part: A > 0 and w > 1 + ε_high; clip
    fraction: w outside the band, any A. ``clipped`` is w clamped to the band.
    """
    with torch.no_grad():
        n = mask.sum().clamp_min(1.0)
        side = (ratio - clipped).sign() * mask  # −1 below the band, +1 above, 0 inside
        outside = side.abs()
        pos, neg = _sign_parts(adv)
        if adv.shape[-1] == 1:  # one advantage per sample: count per row first
            net, total = side.sum(-1, keepdim=True), outside.sum(-1, keepdim=True)
            high, low = ((total + net) * pos).sum() / 2, ((total - net) * neg).sum() / 2
        else:
            high, low = (F.relu(side) * pos).sum(), (F.relu(-side) * neg).sum()
        return {
            mn.RATIO_MEAN: _masked_mean(ratio, mask),
            mn.OOB_LOW_FRAC: low / n,
            mn.OOB_HIGH_FRAC: high / n,
            mn.CLIP_FRAC: outside.sum() / n,
        }


def _clipped_surrogate(
    ratio: Tensor, adv: Tensor, mask: Tensor, config: PolicyLossConfig
) -> tuple[Tensor, dict[str, Tensor]]:
    """ℓ = max(−A w, −A clip(w, 1−ε_low, 1+ε_high)), with the optional dual clip for A < 0.

    Written as ℓ = −A · w_eff with w_eff = min(w, 1+ε_high) for A > 0 and
    min(max(w, 1−ε_low), c) for A < 0 (c = ∞ without dual clip): the same values and
    gradients, built from ``relu`` (whose backward is cheap) and per-sign bounds that are
    (batch, 1) when the advantages are one per sample. Metrics: clip fraction (tokens
    where the clip binds = lower + upper out-of-band parts) and the dual-clip fraction.
    """
    _, neg = _sign_parts(adv)
    dual = config.dual_clip if config.dual_clip is not None else float("inf")
    upper = torch.where(adv > 0, 1.0 + config.clip_high, dual).to(ratio.dtype)
    lower = neg * (1.0 - config.clip_low)  # 0 for A >= 0: never binds since w > 0
    cut_high = F.relu(ratio - upper)
    cut_low = F.relu(lower - ratio)
    loss = -adv * (ratio - cut_high + cut_low)
    with torch.no_grad():
        n = mask.sum().clamp_min(1.0)
        above, dual_cut, _ = _count_by_sign(cut_high.sign(), mask, adv)
        below = _masked_mean(cut_low.sign(), mask)  # only A < 0 rows can be cut below
        metrics = {
            mn.RATIO_MEAN: _masked_mean(ratio, mask),
            mn.OOB_LOW_FRAC: below,
            mn.OOB_HIGH_FRAC: above / n,
            mn.CLIP_FRAC: below + above / n,
        }
        if config.dual_clip is not None:
            metrics[mn.DUAL_CLIP_FRAC] = dual_cut / n
    return loss, metrics


@register_policy_loss("ppo_clip")
def ppo_clip_loss(
    log_prob: Tensor,
    old_log_prob: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    config: PolicyLossConfig,
) -> tuple[Tensor, dict[str, float]]:
    """PPO clipped surrogate (Schulman et al. 2017) on the token ratio w.

    With ``clip_high > clip_low`` it is DAPO's clip-higher (Yu et al. 2025, arXiv
    2503.14476); with ``dual_clip`` the dual-clip bound min(ℓ, −c A) for A < 0 (Ye et al.
    2020, arXiv 1912.09729). Shapes: (batch, tokens) in, 0-dim loss out.
    """
    mask = response_mask.to(log_prob.dtype)
    adv = _token_advantages(advantages, log_prob)
    ratio = _log_ratio(log_prob, old_log_prob).exp()
    loss_mat, metrics = _clipped_surrogate(ratio, adv, mask, config)
    return _finish(loss_mat, mask, config, metrics)


@register_policy_loss("gspo")
def gspo_loss(
    log_prob: Tensor,
    old_log_prob: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    config: PolicyLossConfig,
) -> tuple[Tensor, dict[str, float]]:
    """GSPO (Zheng et al. 2025, arXiv 2507.18071): PPO clip on the sequence ratio.

    s_i = exp((1/T_i) Σ_t m log w_{i,t}) in the token form
    s̃_{i,t} = sg(s_i) · πθ(y_{i,t}) / sg(πθ(y_{i,t})) (log s̃ clamped ≤ 10), so each token's
    gradient is the sequence gradient spread over the sequence. The study aggregates it with
    ``seq-mean-token-mean``. Shapes: (batch, tokens) in, 0-dim loss out.
    """
    mask = response_mask.to(log_prob.dtype)
    adv = _token_advantages(advantages, log_prob)
    with torch.no_grad():
        tokens = mask.sum(-1).clamp_min(1.0)
        seq_log_ratio = torch.linalg.vecdot(_log_ratio(log_prob, old_log_prob), mask) / tokens
        seq_ratio = seq_log_ratio.clamp(max=GSPO_LOG_RATIO_MAX).exp().unsqueeze(-1)
        slope = seq_ratio * (seq_log_ratio <= GSPO_LOG_RATIO_MAX).unsqueeze(-1)
    # sg(s)·(1 + log π − sg(log π)): the value and gradient of sg(s)·π/sg(π), cheaper.
    ratio = seq_ratio + slope * (log_prob - log_prob.detach())
    loss_mat, metrics = _clipped_surrogate(ratio, adv, mask, config)
    return _finish(loss_mat, mask, config, metrics)


@register_policy_loss("cispo")
def cispo_loss(
    log_prob: Tensor,
    old_log_prob: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    config: PolicyLossConfig,
) -> tuple[Tensor, dict[str, float]]:
    """CISPO (MiniMax-M1, arXiv 2506.13585): clip the IS weight, keep every token's gradient.

    ℓ = −sg(clip(w, 1−ε_low, 1+ε_high)) · A · log πθ. The agent runs use ε_low = 1 (no lower
    bound) and ε_high = 0.2. Shapes: (batch, tokens) in, 0-dim loss out.
    """
    mask = response_mask.to(log_prob.dtype)
    adv = _token_advantages(advantages, log_prob)
    with torch.no_grad():
        ratio = _log_ratio(log_prob, old_log_prob).exp()
        weight = ratio.clamp(1.0 - config.clip_low, 1.0 + config.clip_high)
    loss_mat = -(weight * adv) * log_prob
    metrics = _band_metrics(ratio, weight, adv, mask)
    return _finish(loss_mat, mask, config, metrics)


@register_policy_loss("sapo")
def sapo_loss(
    log_prob: Tensor,
    old_log_prob: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    config: PolicyLossConfig,
) -> tuple[Tensor, dict[str, float]]:
    """SAPO (Soft Adaptive Policy Optimization, Qwen team 2025): a soft gate instead of a clip.

    ℓ = −f(w) A with f(w) = (4/τ) σ(τ (w − 1)), τ = τ_pos if A > 0 else τ_neg. The gradient
    4σ(1−σ) w ∇log π equals the policy gradient at w = 1 and fades smoothly away from it.
    The study aggregates it with ``seq-mean-token-mean``; ``SAPO_GATE_MEAN`` logs the mean
    of σ(τ (w − 1)) (0.5 on-policy). Shapes: (batch, tokens) in, 0-dim loss out.
    """
    mask = response_mask.to(log_prob.dtype)
    adv = _token_advantages(advantages, log_prob)
    ratio = _log_ratio(log_prob, old_log_prob).exp()
    tau = config.tau_neg + (config.tau_pos - config.tau_neg) * F.relu(adv.sign())
    gate = torch.sigmoid(torch.addcmul(-tau, tau, ratio))  # σ(τ (w − 1))
    loss_mat = gate * (-4.0 / tau * adv)
    with torch.no_grad():
        band = ratio.clamp(1.0 - config.clip_low, 1.0 + config.clip_high)
        metrics = _band_metrics(ratio, band, adv, mask)
        metrics[mn.SAPO_GATE_MEAN] = _masked_mean(gate, mask)
    return _finish(loss_mat, mask, config, metrics)


@torch.no_grad()
def sequence_mask(
    log_prob: Tensor,
    old_log_prob: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    delta: float,
) -> Tensor:
    """The ``_SM`` rule: drop sample i when A_i < 0 and (1/T_i) Σ_t m log(πold/πθ) > δ.

    ``A_i`` is the masked mean of the sample's token advantages. Returns ``response_mask``
    (same dtype) with the dropped rows zeroed; empty rows are kept as they are.

    Args:
        log_prob, old_log_prob: (batch, tokens).
        advantages: (batch, tokens) or (batch,).
        response_mask: (batch, tokens).
        delta: δ (3e-3 in the agent runs).
    """
    m = response_mask.to(log_prob.dtype)
    tokens = m.sum(-1).clamp_min(1.0)
    drift = torch.linalg.vecdot(old_log_prob - log_prob, m) / tokens  # no exp: no clamp needed
    adv = _token_advantages(advantages, log_prob)
    seq_adv = adv.squeeze(-1) if adv.shape[-1] == 1 else torch.linalg.vecdot(adv, m) / tokens
    keep = ~((seq_adv < 0) & (drift > delta))
    return response_mask * keep.unsqueeze(-1).to(response_mask.dtype)
