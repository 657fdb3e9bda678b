"""Stability diagnostics logged every update, and a detector of training collapse.

Holds :func:`stability_metrics` (the "Stability diagnostics" list of
``docs/algorithms.md``) and :class:`CollapseDetector`. Metric keys live in
:mod:`~arlarena_baselines.algos.metric_names`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from . import metric_names as mn
from .clipping import LOG_RATIO_CLAMP
from .kl import kl_penalty

__all__ = ["CollapseDetector", "stability_metrics"]


def _masked_median(values: Tensor, mask: Tensor) -> Tensor:
    chosen = values[mask > 0]
    return chosen.median() if chosen.numel() else torch.zeros((), dtype=values.dtype)


@torch.no_grad()
def stability_metrics(
    log_prob: Tensor,
    old_log_prob: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    *,
    ref_log_prob: Tensor | None = None,
    entropy: Tensor | None = None,
    entropy_threshold: float | None = None,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    seqs_masked: float | None = None,
    groups_filtered: float | None = None,
    valid_format_ratio: float | None = None,
    success_rate: float | None = None,
    grad_norm: float | None = None,
) -> dict[str, float]:
    """The per-update stability diagnostics, on the token ratio w = πθ / πold.

    - ``KL_OLD``: KL(πθ ‖ πold) estimated on πold's samples as mean(w log w − (w − 1)) ≥ 0;
    - ``KL_REF``: mean k3 KL to π_ref (needs ``ref_log_prob``);
    - ``STAB_CLIP_FRAC``: tokens where PPO's clip binds (= lower + upper part);
      ``OOB_FRAC``: tokens with w outside [1 − ε_low, 1 + ε_high]; ``STAB_OOB_LOW_FRAC``:
      A < 0 and w < 1 − ε_low; ``STAB_OOB_HIGH_FRAC``: A > 0 and w > 1 + ε_high;
      ``OOB_POS_FRAC`` / ``OOB_NEG_FRAC``: w outside the band at A > 0 / A < 0 (either side:
      the study's Figure 3; a fraction of all response tokens, so the two add to ``OOB_FRAC``
      less the tokens at A = 0);
    - ``KL_REF_SHARE_KEYS``: the share of the summed k3 KL carried by each of the 8 token
      groups (A ≥ 0 or A < 0) × (sequence ratio exp(mean log w) < 1 or ≥ 1) × (entropy
      below or at-or-above ``entropy_threshold``, default the masked median); needs
      ``ref_log_prob`` and ``entropy``;
    - the pass-through values (``SEQS_MASKED``, ``GROUPS_FILTERED``, ``VALID_FORMAT_RATIO``,
      ``SUCCESS_RATE``, ``GRAD_NORM``) when given.

    Args:
        log_prob, old_log_prob: (batch, tokens).
        advantages: (batch, tokens) or (batch,).
        response_mask: (batch, tokens).
        ref_log_prob: (batch, tokens) log π_ref, optional.
        entropy: (batch, tokens) token entropies or (batch,) per-sample entropies, optional.

    Returns:
        ``{metric name: float}``.
    """
    m = response_mask.to(log_prob.dtype)
    adv = advantages.to(log_prob.dtype)
    adv = adv.unsqueeze(-1).expand_as(log_prob) if adv.dim() == 1 else adv
    n = m.sum().clamp_min(1.0)
    log_w = (log_prob - old_log_prob).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    w = log_w.exp()
    below, above = w < 1.0 - clip_low, w > 1.0 + clip_high
    low = ((below & (adv < 0)) * m).sum() / n
    high = ((above & (adv > 0)) * m).sum() / n
    outside = below | above
    out: dict[str, Tensor] = {
        mn.KL_OLD: ((w * log_w - (w - 1.0)) * m).sum() / n,
        mn.STAB_CLIP_FRAC: low + high,
        mn.OOB_FRAC: (outside * m).sum() / n,
        mn.STAB_OOB_LOW_FRAC: low,
        mn.STAB_OOB_HIGH_FRAC: high,
        mn.OOB_POS_FRAC: ((outside & (adv > 0)) * m).sum() / n,
        mn.OOB_NEG_FRAC: ((outside & (adv < 0)) * m).sum() / n,
    }
    if ref_log_prob is not None:
        k3 = kl_penalty(log_prob, ref_log_prob, "k3") * m
        out[mn.KL_REF] = k3.sum() / n
        if entropy is not None:
            out.update(_kl_shares(k3, log_w, adv, m, entropy.to(m.dtype), entropy_threshold))
    values = torch.stack([v.float() for v in out.values()]).tolist()
    metrics = dict(zip(out, values, strict=True))
    passed = {
        mn.SEQS_MASKED: seqs_masked,
        mn.GROUPS_FILTERED: groups_filtered,
        mn.VALID_FORMAT_RATIO: valid_format_ratio,
        mn.SUCCESS_RATE: success_rate,
        mn.GRAD_NORM: grad_norm,
    }
    metrics.update({k: float(v) for k, v in passed.items() if v is not None})
    return metrics


def _kl_shares(
    k3: Tensor,
    log_w: Tensor,
    adv: Tensor,
    m: Tensor,
    entropy: Tensor,
    threshold: float | None,
) -> dict[str, Tensor]:
    """Shares of Σ k3 over the 8 groups, keyed as :data:`~.metric_names.KL_REF_SHARE_KEYS`."""
    ent = entropy.unsqueeze(-1).expand_as(k3) if entropy.dim() == 1 else entropy
    cut = _masked_median(ent, m) if threshold is None else torch.tensor(threshold, dtype=m.dtype)
    seq_log_ratio = (log_w * m).sum(-1) / m.sum(-1).clamp_min(1.0)
    bits = (
        (adv >= 0).long() * 4
        + (seq_log_ratio >= 0).long().unsqueeze(-1).expand_as(k3) * 2
        + (ent >= cut).long()
    )
    sums = torch.zeros(8, dtype=k3.dtype).index_add(0, bits.reshape(-1), k3.reshape(-1))
    total = sums.sum()
    shares = torch.where(total > 0, sums / total.clamp_min(torch.finfo(k3.dtype).tiny), 0.0)
    return dict(zip(mn.KL_REF_SHARE_KEYS, shares.unbind(), strict=True))


@dataclass
class CollapseDetector:
    """Flags a collapsing run: gradient norm and KL explode while the valid-format ratio falls.

    Fed one metrics dict per update (keys ``GRAD_NORM``, ``VALID_FORMAT_RATIO`` and
    ``kl_key``, falling back to ``KL_OLD``). The first ``warmup`` complete updates set a
    baseline (their mean); afterwards the baseline is an exponential moving average of the
    updates that do not look exploding. An update is suspicious when the gradient norm
    exceeds ``grad_factor`` × baseline, the KL exceeds ``kl_factor`` × max(baseline,
    ``kl_floor``), and the valid-format ratio is more than ``format_drop`` below its
    baseline. After ``patience`` suspicious updates in a row, :meth:`update` returns a
    message (and keeps returning one while the condition holds); otherwise ``None``.

    >>> detector = CollapseDetector(warmup=2, patience=1)
    >>> healthy = {mn.GRAD_NORM: 1.0, mn.KL_REF: 0.01, mn.VALID_FORMAT_RATIO: 0.9}
    >>> detector.update(healthy), detector.update(healthy)
    (None, None)
    >>> message = detector.update(
    ...     {mn.GRAD_NORM: 20.0, mn.KL_REF: 0.5, mn.VALID_FORMAT_RATIO: 0.4})
    >>> message.split(":")[0], detector.collapsed
    ('collapse at update 3', True)
    """

    grad_factor: float = 5.0
    kl_factor: float = 5.0
    kl_floor: float = 1e-3
    format_drop: float = 0.1
    warmup: int = 5
    momentum: float = 0.9
    patience: int = 2
    kl_key: str = mn.KL_REF
    updates: int = field(default=0, init=False)
    streak: int = field(default=0, init=False)
    collapsed_at: int | None = field(default=None, init=False)
    baseline: dict[str, float] = field(default_factory=dict, init=False)
    _seen: int = field(default=0, init=False, repr=False)

    @classmethod
    def for_steps(cls, steps: int, **changes: Any) -> CollapseDetector:
        """A detector that can fire within a run of ``steps`` updates: a warm-up of an eighth
        of the run (1 to :attr:`warmup` updates) and a patience of 1 below 16 steps, else
        :attr:`patience`; it can then flag a collapse from update 2 of an 8-step run and
        from update 4 of a 16-step one (the defaults: from update 7, whatever the length).

        >>> [(d.warmup, d.patience) for d in map(CollapseDetector.for_steps, (8, 16, 200))]
        [(1, 1), (2, 2), (5, 2)]
        """
        warmup = min(cls.warmup, max(1, steps // 8))
        patience = min(cls.patience, max(1, steps // 8))
        return cls(**{"warmup": warmup, "patience": patience, **changes})

    @property
    def collapsed(self) -> bool:
        """Whether a collapse has been reported at any update so far."""
        return self.collapsed_at is not None

    def _read(self, metrics: Mapping[str, float]) -> dict[str, float] | None:
        kl = metrics.get(self.kl_key, metrics.get(mn.KL_OLD))
        grad, fmt = metrics.get(mn.GRAD_NORM), metrics.get(mn.VALID_FORMAT_RATIO)
        if kl is None or grad is None or fmt is None:
            return None
        return {"grad": float(grad), "kl": float(kl), "format": float(fmt)}

    def _absorb(self, now: dict[str, float]) -> None:
        self._seen += 1
        if self._seen <= self.warmup:
            weight = 1.0 / self._seen
        else:
            weight = 1.0 - self.momentum
        for key, value in now.items():
            self.baseline[key] = self.baseline.get(key, value) * (1.0 - weight) + value * weight

    def update(self, metrics: Mapping[str, float]) -> str | None:
        """Take one update's metrics; return a collapse message or ``None``."""
        self.updates += 1
        now = self._read(metrics)
        if now is None:
            return None
        if self._seen < self.warmup:
            self._absorb(now)
            return None
        base = self.baseline
        kl_base = max(base["kl"], self.kl_floor)
        exploding = (
            now["grad"] > self.grad_factor * base["grad"]
            and now["kl"] > self.kl_factor * kl_base
            and now["format"] < base["format"] - self.format_drop
        )
        if not exploding:
            self.streak = 0
            self._absorb(now)
            return None
        self.streak += 1
        if self.streak < self.patience:
            return None
        if self.collapsed_at is None:
            self.collapsed_at = self.updates
        kl_name = self.kl_key if self.kl_key in metrics else mn.KL_OLD
        return (
            f"collapse at update {self.updates}: gradient norm {now['grad']:.3g} is "
            f"{now['grad'] / max(base['grad'], 1e-12):.1f}x its baseline {base['grad']:.3g}, "
            f"KL ({kl_name}) {now['kl']:.3g} is {now['kl'] / kl_base:.1f}x its baseline "
            f"{base['kl']:.3g}, and the valid-format ratio fell to {now['format']:.3g} "
            f"from {base['format']:.3g}"
        )
