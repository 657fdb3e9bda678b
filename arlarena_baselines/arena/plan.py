"""Which runs an arena makes: every method, its settings and its seeds, from one base config.

Holds :class:`Setting` (a named variant of a method's configuration and its role),
:class:`RunSpec` (one method × setting × seed, with its folder and its :class:`TrainConfig`),
:class:`ArenaPlan` (the methods, seeds, stabiliser and staleness rows and grid of an arena),
:func:`parse_grid` (the ``--grid METHOD:key=v1,v2`` strings) and :func:`plan_runs`.

Roles (``Setting.role``):

- ``start``: no training: the starting checkpoint's held-out evaluation (one per seed, shared
  by every run of that seed, which therefore skip their own step-0 evaluation);
- ``base``: the method as registered in ``METHODS``, on the base config;
- ``grid``: one point of the method's hyperparameter grid (the study's per-method search);
- ``stabiliser``: the study's stabiliser rows for CISPO and SAPO (its Table 4): a larger KL
  coefficient, or a larger update mini-batch (fewer, less off-policy updates). The third
  stabiliser, the sequence mask, is a method of its own (``CISPO_SM``, ``SAPO_SM``);
- ``staleness``: the IS-clipping methods with several times more update mini-batches per
  rollout batch, so that later mini-batches are further off-policy;
- ``stress``: one cell of the stress grid (:class:`StressGrid`): a learning rate × a number of
  update mini-batches per rollout batch, in short runs, to provoke the study's collapse on
  purpose. Its runs make their own step-0 evaluation (their held-out levels are the grid's).

Runs other than the stress grid's end with a final evaluation of their model (and the start's)
on ``ArenaPlan.final_episodes`` held-out levels at each of ``ArenaPlan.final_temperatures``.

Every run of an arena starts from the same checkpoint with the same base config; runs differ
only in the method, their setting's overrides and ``run.seed`` (which keys the rollouts'
sampling streams, the mini-batch shuffles and the held-out episodes' streams, so the runs of one
seed are evaluated on identical episodes).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import typing
from dataclasses import dataclass, field
from pathlib import Path

from arlarena_baselines.algos import METHODS, Method, get_method
from arlarena_baselines.trainer.config import (
    TrainConfig,
    apply_overrides,
    coerce,
    config_to_dict,
)

__all__ = [
    "IS_CLIPPING_METHODS",
    "ROLES",
    "STABILISED_METHODS",
    "START",
    "ArenaPlan",
    "RunSpec",
    "Setting",
    "StressGrid",
    "parse_grid",
    "plan_runs",
]

ROLES = ("start", "base", "grid", "stabiliser", "staleness", "stress")
# The name under which the starting checkpoint's own evaluation is reported.
START = "checkpoint"
# The study's IS-clipping comparison: one method per clipping rule, all with GRPO advantages.
IS_CLIPPING_METHODS = ("GRPO", "GSPO", "CISPO", "SAPO")
# The tolerant-clipping methods whose collapse the stabiliser rows address.
STABILISED_METHODS = ("CISPO", "SAPO")
_METHOD_FIELDS = {f.name for f in dataclasses.fields(Method)} - {"name", "summary"}


@dataclass(frozen=True)
class Setting:
    """A named variant of a method's configuration.

    Attributes:
        role: one of :data:`ROLES`.
        overrides: ``section.field=value`` strings applied over the base config.
        budget: overrides shared by a family of settings (the stress grid's short runs),
            applied last and left out of the name.
    """

    role: str = "base"
    overrides: tuple[str, ...] = ()
    budget: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """``base``, ``start``, or the role and the overridden values, e.g.
        ``grid-clip_high=0.28``."""
        if not self.overrides:
            return self.role
        values = "+".join(_short(o) for o in self.overrides)
        return f"{self.role}-{values}"


def _short(override: str) -> str:
    """``rl.method_overrides.clip_high=0.28`` → ``clip_high=0.28``; ``rl.lr=1e-5`` → ``lr=1e-5``."""
    key, _, value = override.partition("=")
    return f"{key.rsplit('.', 1)[-1]}={value}"


@dataclass(frozen=True)
class RunSpec:
    """One run of the arena: a method in a setting with one seed."""

    method: str
    setting: Setting
    seed: int
    final_temperatures: tuple[float, ...] = ()
    final_episodes: int = 0

    def folder(self, root: str | Path) -> Path:
        """``ROOT/<method>/<setting name>/seed<seed>``."""
        return Path(root) / self.method / self.setting.name / f"seed{self.seed}"

    def config(self, base: TrainConfig, root: str | Path) -> TrainConfig:
        """The run's full config: ``base`` with the method, the setting, the seed and the
        folder; the trainer's own progress bars are off (the arena draws one over all runs),
        and so is its step-0 evaluation (the ``start`` run of the seed makes it once), unless
        the setting's budget turns it on."""
        method = [] if self.setting.role == "start" else [f"rl.method={self.method}"]
        return apply_overrides(base, [
            *method,
            *self.setting.overrides,
            f"run.seed={self.seed}",
            f"run.out={self.folder(root)}",
            "run.progress=false",
            "eval.at_start=false",
            *self.setting.budget,
        ])

    @property
    def trains(self) -> bool:
        return self.setting.role != "start"

    def label(self) -> str:
        return f"{self.method} {self.setting.name} seed {self.seed}"


@dataclass(frozen=True)
class StressGrid:
    """The stress axis of findings 1 and 2: every ``lrs`` × ``mini_batches`` cell for each of
    ``methods``, ``seeds`` short runs each.

    Attributes:
        methods: names of :data:`~arlarena_baselines.algos.METHODS`.
        lrs: learning rates (YAML strings).
        mini_batches: update mini-batches per rollout batch (``rl.mini_batches``): 1 is
            on-policy; more make the later updates of a step further off-policy.
        seeds: runs per method and cell.
        budget: the short runs' overrides of the base config (``rl.steps=8``, …); each run
            also evaluates its own start (``eval.at_start``).
    """

    methods: tuple[str, ...] = ("GRPO", "GSPO", "CISPO", "SAPO", "CISPO_SM", "SAPO_SM")
    lrs: tuple[str, ...] = ()
    mini_batches: tuple[int, ...] = (1,)
    seeds: int = 2
    budget: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "methods", tuple(get_method(m).name for m in self.methods))
        if not self.lrs or not self.mini_batches or self.seeds < 1:
            raise ValueError("a stress grid needs learning rates, mini-batch counts and seeds")
        if min(self.mini_batches) < 1:
            raise ValueError(f"mini-batch counts must be >= 1, got {self.mini_batches}")

    def settings(self) -> list[Setting]:
        """One setting per cell, learning rate first."""
        budget = (*self.budget, "eval.at_start=true")
        return [Setting("stress", (f"rl.lr={lr}", f"rl.mini_batches={k}"), budget)
                for lr in self.lrs for k in self.mini_batches]


@dataclass
class ArenaPlan:
    """What an arena runs.

    Attributes:
        methods: names of :data:`~arlarena_baselines.algos.METHODS` (all by default).
        seeds: runs per method and setting, with ``run.seed`` = base seed + 0, 1, …
        stabilisers: add the stabiliser rows for those of :data:`STABILISED_METHODS` in
            ``methods``.
        stabiliser_kl: the KL coefficient of the KL stabiliser row (the study: 0.05).
        stabiliser_batch: the mini-batch stabiliser row's ``rl.mini_batch_size`` as a multiple
            of the base one (skipped when the base already makes one update per rollout batch).
        staleness: the staleness rows' factor: ``rl.mini_batch_size`` divided by it, so each
            rollout batch gives about this many times more updates (0: no staleness rows). A
            base of ``null`` (one update) is replaced by the step's episodes divided by it.
        grid: per method, ``{key: [values]}``: every combination is one ``grid`` setting. A key
            is a :class:`~arlarena_baselines.algos.Method` field (``clip_high``) or a config
            field (``rl.lr``); values are YAML strings.
        stress: the stress grid, or ``None``.
        final_temperatures: the sampling temperatures of each run's final evaluation (none:
            no final evaluation; the report then reads the trainer's last one).
        final_episodes: the held-out levels of the final evaluation.
    """

    methods: tuple[str, ...] = tuple(METHODS)
    seeds: int = 1
    stabilisers: bool = True
    stabiliser_kl: float = 0.05
    stabiliser_batch: int = 4
    staleness: int = 4
    grid: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    stress: StressGrid | None = None
    final_temperatures: tuple[float, ...] = ()
    final_episodes: int = 1024

    def __post_init__(self) -> None:
        self.methods = tuple(get_method(m).name for m in self.methods)
        if self.seeds < 1:
            raise ValueError(f"seeds must be >= 1, got {self.seeds}")
        if self.stabiliser_batch < 1 or self.staleness < 0:
            raise ValueError("stabiliser_batch must be >= 1 and staleness >= 0")
        self.grid = {get_method(m).name: dict(v) for m, v in self.grid.items()}
        outside = sorted(set(self.grid) - set(self.methods))
        if outside:
            raise ValueError(f"--grid names methods the arena does not run: {', '.join(outside)}")
        if self.final_temperatures and self.final_episodes < 1:
            raise ValueError(f"final_episodes must be >= 1, got {self.final_episodes}")


def parse_grid(items: list[str]) -> dict[str, dict[str, tuple[str, ...]]]:
    """``["CISPO:clip_high=0.2,0.28", "CISPO:rl.lr=1e-4,3e-4"]`` →
    ``{"CISPO": {"clip_high": ("0.2", "0.28"), "rl.lr": ("1e-4", "3e-4")}}``.

    >>> parse_grid(["gspo:clip_low=3e-3,4e-3"])
    {'GSPO': {'clip_low': ('3e-3', '4e-3')}}
    """
    grid: dict[str, dict[str, tuple[str, ...]]] = {}
    for item in items:
        method, colon, assignment = item.partition(":")
        key, eq, values = assignment.partition("=")
        choices = tuple(v.strip() for v in values.split(",") if v.strip())
        if not colon or not eq or not key.strip() or not choices:
            raise ValueError(f"--grid {item!r} must look like METHOD:key=value1,value2")
        key = key.strip()
        if "." not in key and key not in _METHOD_FIELDS:
            known = ", ".join(sorted(_METHOD_FIELDS))
            raise ValueError(f"--grid {item!r}: {key!r} is neither a Method field ({known}) "
                             "nor a config field (section.field)")
        grid.setdefault(get_method(method.strip()).name, {})[key] = choices
    return grid


def _yaml_scalar(value: object) -> str:
    """``value`` written so that YAML reads it back as the same type (PyYAML reads ``1e-05``,
    without a dot, as a string)."""
    if isinstance(value, float):
        text = repr(value)
        return text.replace("e", ".0e") if "e" in text and "." not in text else text
    return value if isinstance(value, str) else json.dumps(value)


def _method_override(key: str, value: object) -> str:
    """``rl.method_overrides.<key>=<value>``, the value typed as the :class:`Method` field
    (a method override is a free mapping, so the config cannot type it)."""
    typed = coerce(value, typing.get_type_hints(Method)[key], f"Method.{key}")
    return f"rl.method_overrides.{key}={_yaml_scalar(typed)}"


def _override(key: str, value: str) -> str:
    """A grid key as a config override: Method fields go to ``rl.method_overrides``."""
    return f"{key}={value}" if "." in key else _method_override(key, value)


def _grid_settings(axes: dict[str, tuple[str, ...]]) -> list[Setting]:
    keys = list(axes)
    return [
        Setting("grid", tuple(_override(k, v) for k, v in zip(keys, combo, strict=True)))
        for combo in itertools.product(*(axes[k] for k in keys))
    ]


def _effective(base: TrainConfig, method: str, setting: Setting) -> dict:
    """What a setting changes, for spotting a grid point equal to the base: the config and
    the method's resolved hyperparameters."""
    config = apply_overrides(base, [f"rl.method={method}", *setting.overrides])
    resolved = get_method(method).with_overrides(**config.rl.method_overrides)
    data = config_to_dict(config)
    data["rl"]["method_overrides"] = dataclasses.asdict(resolved)
    return data


def _settings(plan: ArenaPlan, base: TrainConfig, method: str) -> list[Setting]:
    settings = [Setting()]
    batch = base.rl.mini_batch_size
    rows = (plan.stabilisers and method in STABILISED_METHODS and plan.stabiliser_batch > 1) or (
        plan.staleness > 1 and method in IS_CLIPPING_METHODS)
    if rows and base.rl.mini_batches is not None:
        raise ValueError("the staleness and mini-batch stabiliser rows set rl.mini_batch_size, "
                         "which a base rl.mini_batches overrides: use --staleness 0 and "
                         "--stabiliser-batch 1, or a base rl.mini_batch_size")
    if plan.stabilisers and method in STABILISED_METHODS:
        settings.append(Setting("stabiliser", (_method_override("kl_coef", plan.stabiliser_kl),)))
        if batch is not None and plan.stabiliser_batch > 1:
            settings.append(Setting("stabiliser", (
                f"rl.mini_batch_size={batch * plan.stabiliser_batch}",)))
    if plan.staleness > 1 and method in IS_CLIPPING_METHODS:
        episodes = base.rollout.n_groups * base.rollout.group_size
        stale = max(1, (batch if batch is not None else episodes) // plan.staleness)
        settings.append(Setting("staleness", (f"rl.mini_batch_size={stale}",)))
    if method in plan.grid:
        reference = _effective(base, method, Setting())
        settings += [s for s in _grid_settings(plan.grid[method])
                     if _effective(base, method, s) != reference]
    return settings


def plan_runs(plan: ArenaPlan, base: TrainConfig, root: str | Path) -> list[RunSpec]:
    """Every run of ``plan``: first the starting checkpoint's evaluation per seed (when there
    are methods), then the methods' runs in order (method, setting, seed), then the stress
    grid's (seed, cell, method: every cell has a seed before any has two), each validated: a
    bad method override or config value fails here, before anything runs."""
    final = {"final_temperatures": plan.final_temperatures,
             "final_episodes": plan.final_episodes if plan.final_temperatures else 0}
    seeds = [base.run.seed + k for k in range(plan.seeds)] if plan.methods else []
    runs = [RunSpec(START, Setting("start"), seed, **final) for seed in seeds]
    for method in plan.methods:
        for setting in _settings(plan, base, method):
            for seed in seeds:
                runs.append(RunSpec(method, setting, seed, **final))
    if plan.stress is not None:
        runs += [RunSpec(method, setting, base.run.seed + k)
                 for k in range(plan.stress.seeds) for setting in plan.stress.settings()
                 for method in plan.stress.methods]
    for spec in runs:
        if spec.trains:
            config = spec.config(base, root)
            get_method(spec.method).with_overrides(**config.rl.method_overrides)
    return runs
