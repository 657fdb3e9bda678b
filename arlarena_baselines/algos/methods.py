"""The named recipes of the study: one choice per dimension plus hyperparameters.

Holds :class:`Method` (a frozen dataclass), the registry :data:`METHODS` with the 13 methods
of ``docs/algorithms.md`` ("The methods of the study"), :func:`get_method` (case-insensitive),
:func:`register_method`, and :func:`method_table_markdown` (the README's table, generated
from :data:`METHODS`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from .advantage import ADVANTAGE_ESTIMATORS, GIGPO_MODES
from .aggregation import AGG_MODES
from .clipping import POLICY_LOSSES, PolicyLossConfig
from .filtering import FILTERS
from .kl import KL_ESTIMATORS
from .registry import Registry

__all__ = ["METHODS", "Method", "get_method", "method_table_markdown", "register_method"]


@dataclass(frozen=True)
class Method:
    """One policy-optimization recipe: a part per dimension and its hyperparameters.

    Part names are looked up in the registries (``aggregation`` in ``AGG_MODES``,
    ``clipping`` in ``POLICY_LOSSES``, ``advantage`` in ``ADVANTAGE_ESTIMATORS``,
    ``filtering`` in ``FILTERS`` or ``None``), so a trainer reads the parts, never the name.
    Defaults are the study's agent-run settings. Change hyperparameters with
    :meth:`with_overrides`.

    >>> get_method("sampo").with_overrides(gigpo_mode="mean_norm", cold_start_steps=5).clipping
    'gspo'
    """

    name: str
    aggregation: str
    clipping: str
    advantage: str
    filtering: str | None = None
    sequence_mask: bool = False
    # clipping
    clip_low: float = 0.2
    clip_high: float = 0.2
    dual_clip: float | None = None
    tau_pos: float = 1.0
    tau_neg: float = 1.05
    delta: float = 3e-3
    agg_len: int | None = None
    # advantage
    norm_by_std: bool = True
    per_trajectory_stats: bool = False
    adv_eps: float = 1e-6
    gamma: float = 0.95
    omega: float = 1.0
    gigpo_mode: str = "mean_std_norm"
    empg_k: float = 1.0
    empg_k_f: float = 1.0
    empg_zeta: float = 0.05
    # filtering
    max_num_gen_batches: int = 3
    cold_start_steps: int = 0
    # regularisers
    kl_coef: float = 0.01
    kl_estimator: str = "k3"
    entropy_coef: float = 0.001
    summary: str = ""

    def __post_init__(self) -> None:
        # Registry lookups raise UnknownNameError listing the known parts.
        parts = [(POLICY_LOSSES, self.clipping), (ADVANTAGE_ESTIMATORS, self.advantage)]
        parts += [(FILTERS, self.filtering)] if self.filtering is not None else []
        for registry, part in parts:
            registry[part]
        checks = {
            "aggregation": (self.aggregation, AGG_MODES),
            "kl_estimator": (self.kl_estimator, KL_ESTIMATORS),
            "gigpo_mode": (self.gigpo_mode, GIGPO_MODES),
        }
        for what, (value, known) in checks.items():
            if value not in known:
                raise ValueError(
                    f"{self.name}: unknown {what} {value!r}; known: {', '.join(known)}"
                )
        if self.max_num_gen_batches < 1 or self.cold_start_steps < 0:
            raise ValueError(f"{self.name}: need max_num_gen_batches >= 1, cold_start_steps >= 0")
        self.policy_loss_config()

    def policy_loss_config(self) -> PolicyLossConfig:
        """The :class:`PolicyLossConfig` of this method (its ε, dual clip, τ, aggregation)."""
        return PolicyLossConfig(
            clip_low=self.clip_low,
            clip_high=self.clip_high,
            dual_clip=self.dual_clip,
            tau_pos=self.tau_pos,
            tau_neg=self.tau_neg,
            agg=self.aggregation,
            agg_len=self.agg_len,
        )

    def with_overrides(self, **changes: Any) -> Method:
        """A copy with some fields changed (validated); an unknown field lists the known ones."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(f"unknown Method field(s) {unknown}; known: {', '.join(sorted(known))}")
        return replace(self, **changes)


METHODS: Registry[Method] = Registry("method", case_sensitive=False)


def register_method(method: Method, *, override: bool = False) -> Method:
    """Add ``method`` to :data:`METHODS` under ``method.name``."""
    return METHODS.add(method.name, method, override=override)


def get_method(name: str) -> Method:
    """The method called ``name`` (case-insensitive); an unknown name lists the known ones."""
    return METHODS[name]


_DAPO = {"filtering": "dapo", "clip_low": 0.2, "clip_high": 0.28, "dual_clip": 3.0}
_GSPO_EPS = {"clip_low": 3e-3, "clip_high": 4e-3}
_CISPO_EPS = {"clip_low": 1.0, "clip_high": 0.2}

for _method in (
    Method("GRPO", "token-mean", "ppo_clip", "grpo", dual_clip=3.0,
           summary="PPO clip with group-normalised returns (Shao et al. 2024)"),
    Method("GRPO_ST", "seq-mean-token-mean", "ppo_clip", "grpo", dual_clip=3.0,
           summary="GRPO with sequence-then-token averaging"),
    Method("GSPO", "seq-mean-token-mean", "gspo", "grpo", **_GSPO_EPS,
           summary="sequence-level ratio and clip (Zheng et al. 2025)"),
    Method("CISPO", "token-mean", "cispo", "grpo", **_CISPO_EPS,
           summary="clipped IS weight, every token keeps its gradient (MiniMax 2025)"),
    Method("SAPO", "seq-mean-token-mean", "sapo", "grpo",
           summary="soft sigmoid gate instead of a hard clip (Qwen 2025)"),
    Method("GRPO_SM", "token-mean", "ppo_clip", "grpo", sequence_mask=True, dual_clip=3.0,
           summary="GRPO + masking of drifted negative-advantage sequences"),
    Method("CISPO_SM", "token-mean", "cispo", "grpo", sequence_mask=True, **_CISPO_EPS,
           summary="CISPO + sequence masking"),
    Method("SAPO_SM", "seq-mean-token-mean", "sapo", "grpo", sequence_mask=True,
           summary="SAPO + sequence masking"),
    Method("GiGPO", "token-mean", "ppo_clip", "gigpo", dual_clip=3.0,
           summary="episode + anchor-state step advantages (Feng et al. 2025)"),
    Method("EMPG", "token-mean", "ppo_clip", "empg", dual_clip=3.0,
           summary="entropy-modulated GRPO advantages (Wang et al. 2025)"),
    Method("DAPO_GRPO", "token-mean", "ppo_clip", "grpo", **_DAPO,
           summary="GRPO + clip-higher + dynamic sampling (Yu et al. 2025)"),
    Method("DAPO_GiGPO", "token-mean", "ppo_clip", "gigpo", **_DAPO,
           summary="GiGPO + clip-higher + dynamic sampling"),
    Method("SAMPO", "seq-mean-token-mean", "gspo", "gigpo", filtering="dapo", **_GSPO_EPS,
           cold_start_steps=15,
           summary="the study's recipe: GSPO + GiGPO + dynamic sampling (ALFWorld settings;"
           " WebShop: gigpo_mode='mean_norm', cold_start_steps=5)"),
):  # fmt: skip
    register_method(_method)

# Which Method fields each part reads, for the rendered table.
_PART_FIELDS: dict[str, tuple[str, ...]] = {
    "ppo_clip": ("clip_low", "clip_high", "dual_clip"),
    "gspo": ("clip_low", "clip_high"),
    "cispo": ("clip_low", "clip_high"),
    "sapo": ("tau_pos", "tau_neg"),
    "gigpo": ("gamma", "omega", "gigpo_mode"),
    "empg": ("empg_k", "empg_k_f", "empg_zeta"),
    "dapo": ("max_num_gen_batches", "cold_start_steps"),
}


def _describe(method: Method, part: str | None) -> str:
    if part is None:
        return "–"
    params = ", ".join(f"{f}={getattr(method, f)}" for f in _PART_FIELDS.get(part, ()))
    return f"`{part}` ({params})" if params else f"`{part}`"


def method_table_markdown(methods: Registry[Method] | None = None) -> str:
    """The method table as markdown, one row per registered method (for the README)."""
    rows = [
        "| method | aggregation | clipping | advantage | filter | seq. mask | notes |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in (methods if methods is not None else METHODS).values():
        mask = f"δ={m.delta}" if m.sequence_mask else "–"
        rows.append(
            f"| {m.name} | `{m.aggregation}` | {_describe(m, m.clipping)} | "
            f"{_describe(m, m.advantage)} | {_describe(m, m.filtering)} | {mask} | {m.summary} |"
        )
    return "\n".join(rows)
