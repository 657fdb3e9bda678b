"""The named recipes of the study: one choice per dimension plus hyperparameters.

Holds :class:`Method` (a frozen dataclass), the registry :data:`METHODS` with the 13 methods
of ``docs/algorithms.md`` ("The methods of the study") at the study's ALFWorld settings,
:func:`get_method` (case-insensitive), :func:`study_method` (a method at the study's settings
of an env, from :mod:`.study`), :func:`register_method`, :func:`method_table_markdown` (the table
of docs/methods.md) and :func:`study_sources_markdown` (every value with its source, for
``docs/algorithms.md``).
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
from .study import PAPER, STUDY_ENVS, STUDY_SETTINGS, study_settings

__all__ = [
    "METHODS",
    "Method",
    "get_method",
    "method_fields",
    "method_table_markdown",
    "register_method",
    "study_method",
    "study_sources_markdown",
]


@dataclass(frozen=True)
class Method:
    """One policy-optimization recipe: a part per dimension and its hyperparameters.

    Part names are looked up in the registries (``aggregation`` in ``AGG_MODES``,
    ``clipping`` in ``POLICY_LOSSES``, ``advantage`` in ``ADVANTAGE_ESTIMATORS``,
    ``filtering`` in ``FILTERS`` or ``None``), so a trainer reads the parts, never the name.
    The registered methods carry the study's ALFWorld settings (:mod:`.study`); change
    hyperparameters with :meth:`with_overrides`. ``regularizer_aggregation`` aggregates the KL
    and entropy terms (``None``: as the loss); ``top_up`` fills a filtered batch with rejected
    groups after the last round (the study's ``filter_group_data``); ``overlong_max_len``
    turns on DAPO's overlong penalty on each turn's response (buffer ``overlong_max_len / 5``,
    factor 0.1, as the study's DAPO reward manager).

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
    top_up: bool = True
    overlong_max_len: int | None = None
    # regularisers
    kl_coef: float = 0.01
    kl_estimator: str = "k3"
    entropy_coef: float = 0.001
    regularizer_aggregation: str | None = None
    summary: str = ""

    def __post_init__(self) -> None:
        # Registry lookups raise UnknownNameError listing the known parts.
        parts = [(POLICY_LOSSES, self.clipping), (ADVANTAGE_ESTIMATORS, self.advantage)]
        parts += [(FILTERS, self.filtering)] if self.filtering is not None else []
        for registry, part in parts:
            registry[part]
        checks = {
            "aggregation": (self.aggregation, AGG_MODES),
            "regularizer_aggregation": (self.regularizer_aggregation or self.aggregation,
                                        AGG_MODES),
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
        if self.overlong_max_len is not None and self.overlong_max_len < 5:
            raise ValueError(f"{self.name}: overlong_max_len must be >= 5 (its buffer is a fifth)")
        self.policy_loss_config()

    @property
    def reg_aggregation(self) -> str:
        """How the KL and entropy terms are aggregated."""
        return self.regularizer_aggregation or self.aggregation

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


def study_method(name: str, env: str | None = None) -> Method:
    """Method ``name`` at the study's settings on ``env`` (an ARLArena env name or gymnasium id,
    or a column of :data:`~.study.STUDY_SETTINGS`; ``None`` or an env the study has no script
    for: the ALFWorld settings, those of :data:`METHODS`).

    >>> study_method("GSPO", "webshop").clip_low, get_method("GSPO").clip_low
    (0.03, 0.0003)
    """
    method = get_method(name)
    settings = study_settings(method.name, env)
    return method.with_overrides(**{k: s.value for k, s in settings.items()})


# The parts of each method; the hyperparameters come from the study's ALFWorld column.
for _method in (
    Method("GRPO", "token-mean", "ppo_clip", "grpo",
           summary="PPO clip with group-normalised returns (Shao et al. 2024)"),
    Method("GRPO_ST", "seq-mean-token-mean", "ppo_clip", "grpo",
           summary="GRPO with sequence-then-token averaging"),
    Method("GSPO", "seq-mean-token-mean", "gspo", "grpo",
           summary="sequence-level ratio and clip (Zheng et al. 2025)"),
    Method("CISPO", "token-mean", "cispo", "grpo",
           summary="clipped IS weight, every token keeps its gradient (MiniMax 2025)"),
    Method("SAPO", "token-mean", "sapo", "grpo",
           summary="soft sigmoid gate instead of a hard clip (Qwen 2025)"),
    Method("GRPO_SM", "token-mean", "ppo_clip", "grpo", sequence_mask=True,
           summary="GRPO + masking of drifted negative-advantage sequences"),
    Method("CISPO_SM", "token-mean", "cispo", "grpo", sequence_mask=True,
           summary="CISPO + sequence masking"),
    Method("SAPO_SM", "token-mean", "sapo", "grpo", sequence_mask=True,
           summary="SAPO + sequence masking"),
    Method("GiGPO", "token-mean", "ppo_clip", "gigpo",
           summary="episode + anchor-state step advantages (Feng et al. 2025)"),
    Method("EMPG", "token-mean", "ppo_clip", "empg",
           summary="entropy-modulated GRPO advantages (Wang et al. 2025)"),
    Method("DAPO_GRPO", "token-mean", "ppo_clip", "grpo", filtering="dapo",
           summary="GRPO + DAPO's dynamic sampling (Yu et al. 2025); the study's scripts keep "
           "ε_high = 0.2"),
    Method("DAPO_GiGPO", "token-mean", "ppo_clip", "gigpo", filtering="dapo",
           summary="GiGPO + clip-higher + dynamic sampling"),
    Method("SAMPO", "seq-mean-token-mean", "gspo", "gigpo", filtering="dapo",
           summary="the study's recipe: GSPO + GiGPO + dynamic sampling"),
):  # fmt: skip
    register_method(_method.with_overrides(**{
        k: s.value for k, s in STUDY_SETTINGS[_method.name]["alfworld"].items()
    }))

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


def method_fields(method: Method) -> list[str]:
    """The hyperparameters ``method`` reads (its parts', the mask's, the regularisers')."""
    keys = ["aggregation", "regularizer_aggregation"]
    for part in (method.clipping, method.advantage, method.filtering):
        keys += [k for k in _PART_FIELDS.get(part or "", ()) if k not in keys]
    if method.filtering is not None:
        keys += ["top_up", "overlong_max_len"]
    keys += ["sequence_mask", "delta"] if method.sequence_mask else ["sequence_mask"]
    return [*keys, "kl_coef", "kl_estimator", "entropy_coef"]


def _env_cell(method: Method, base: Method, env: str) -> str:
    """The settings of ``method`` on ``env`` that differ from ``base`` (all if ``base`` is it)."""
    sources = STUDY_SETTINGS[method.name].get(env)
    if sources is None:
        return "no script: as ALFWorld"
    shown = [k for k in method_fields(method) if k not in ("aggregation", "sequence_mask")
             and (method is base or getattr(method, k) != getattr(base, k))]
    shown += [k for k in ("aggregation", "sequence_mask")
              if method is not base and getattr(method, k) != getattr(base, k)]
    if "sequence_mask" in shown and "delta" not in shown:
        shown.append("delta")
    if method is base:
        shown = [k for k in shown if k in sources and k not in ("kl_estimator", "top_up")
                 and not (k == "regularizer_aggregation"
                          and method.reg_aggregation == method.aggregation)]
    text = ", ".join(f"{k}={getattr(method, k)}" for k in shown) or "same"
    return f"{text} (paper)" if all(s.source == PAPER for s in sources.values()) else text


def method_table_markdown(methods: Registry[Method] | None = None) -> str:
    """The method table as markdown, one row per registered method (for docs/methods.md): its
    parts, its study settings on ALFWorld (also used on Sokoban, TIR Math and Bandit) and
    what changes on WebShop; "(paper)" marks the methods the study has no script for."""
    rows = [
        "| method | aggregation | clipping | advantage | filter | seq. mask | ALFWorld (default) "
        "| WebShop | notes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in (methods if methods is not None else METHODS).values():
        mask = f"δ={m.delta}" if m.sequence_mask else "–"
        filter_ = f"`{m.filtering}`" if m.filtering else "–"
        if m.name in STUDY_SETTINGS:
            alf = _env_cell(m, m, "alfworld")
            shop = _env_cell(study_method(m.name, "webshop"), m, "webshop")
        else:
            alf = shop = "–"
        rows.append(
            f"| {m.name} | `{m.aggregation}` | `{m.clipping}` | `{m.advantage}` | "
            f"{filter_} | {mask} | {alf} | {shop} | {m.summary} |"
        )
    return "\n".join(rows)


def study_sources_markdown() -> str:
    """Every study setting with its source, one row per method, env and field (for
    ``docs/algorithms.md``); paths are in the study's repository (WillDreamer/ARLArena)."""
    rows = ["| method | env | field | value | source |", "|---|---|---|---|---|"]
    for name, columns in STUDY_SETTINGS.items():
        for env in STUDY_ENVS:
            if env not in columns:
                rows.append(f"| {name} | {env} | – | as ALFWorld | no {env} script |")
                continue
            for key, setting in columns[env].items():
                rows.append(f"| {name} | {env} | `{key}` | {setting.value} | {setting.source} |")
    return "\n".join(rows)
