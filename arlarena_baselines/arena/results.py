"""An arena's finished runs, loaded and grouped: what the report, the findings and the stress
grid read.

Holds :class:`RunResult` (one run folder: its ``arena.json``, its ``metrics.jsonl``, its held-out
episodes; the logs plain, or gzip-compressed in a committed copy), :class:`ConfigResult` (one
method × setting over its seeds), :func:`load_runs`, :func:`final_temperatures`,
:func:`summarize`, :func:`select_configs` (per method, the best stable configuration of its
base and grid settings) and :func:`viewed_at` (configurations through their final evaluation at
one temperature).

Where the arena made final evaluations, a run's held-out outcomes are those of its final
evaluation at one temperature (:meth:`RunResult.at`; a run that lacks it has none there);
otherwise those of the trainer's last evaluation. A run *collapses* when the collapse detector
fired or its held-out success fell from its peak beyond :data:`~.stats.COLLAPSE_Z` paired
standard errors and stayed there (:func:`~.stats.peak_drop`); a configuration is stable when
none of its runs collapsed. The study's variance of training success is quoted beside it, not
judged on (see :mod:`.stats`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from arlarena_baselines.algos import METHODS
from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.arena.figures import mean_records
from arlarena_baselines.arena.plan import ROLES, START
from arlarena_baselines.arena.runner import FINAL_FILE, RECORD_FILE
from arlarena_baselines.arena.stats import (
    Drop,
    format_fall_step,
    mean_se,
    peak_drop,
    select_best,
    stability_variance,
)
from arlarena_baselines.evaluation.results import read_records
from arlarena_baselines.trainer.tracking import EVAL_EPISODES_FILE, METRICS_FILE

__all__ = ["ConfigResult", "RunResult", "final_temperatures", "load_runs", "select_configs",
           "summarize", "viewed_at"]

_ORDER = {START: -1, **{name: i for i, name in enumerate(METHODS)}}
_ROLE_ORDER = {role: i for i, role in enumerate(ROLES)}
_EVAL_FORMAT = mn.eval_key(mn.VALID_FORMAT_RATIO)


@dataclass
class RunResult:
    """One finished run: its ``arena.json`` record, its RL metrics step by step, the episodes
    the tables read (:meth:`at`), its held-out curve and its final evaluation's episodes."""

    folder: Path | None
    record: dict[str, Any]
    records: list[dict[str, Any]]
    episodes: list[dict[str, Any]]
    curve: dict[int, dict[int, float]] = field(default_factory=dict)
    final: list[dict[str, Any]] = field(default_factory=list)

    @property
    def seed(self) -> int:
        return int(self.record["seed"])

    def at(self, temperature: float) -> RunResult:
        """This run seen through its final evaluation at ``temperature``."""
        return dataclasses.replace(
            self, episodes=[e for e in self.final if e["temperature"] == temperature])

    def outcomes(self, key: str = "won") -> dict[tuple[int, int], float]:
        """The held-out evaluation the tables read, ``{(seed, level seed): value}``."""
        return {(self.seed, e["seed"]): float(e[key]) for e in self.episodes}

    @property
    def steps(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["step"] > 0]

    @property
    def variance(self) -> float:
        """The study's stability criterion of this run (quoted, see :mod:`.stats`)."""
        return stability_variance([r[mn.SUCCESS_RATE] for r in self.steps
                                   if r.get(mn.SUCCESS_RATE) is not None])

    @property
    def detector_step(self) -> int | None:
        """The first step at which the collapse detector fired, or ``None``."""
        return next((r["step"] for r in self.steps if r.get(mn.COLLAPSE)), None)

    @cached_property
    def drop(self) -> Drop | None:
        """The held-out curve's fall from its peak (:func:`~.stats.peak_drop`)."""
        return peak_drop(self.curve)

    @property
    def drop_step(self) -> int | None:
        """The step from which held-out success stayed below its peak beyond
        :data:`~.stats.COLLAPSE_Z` paired standard errors, through the last evaluation."""
        return self.drop.step if self.drop is not None else None

    @property
    def format_fall_step(self) -> int | None:
        """The step from which the held-out valid-format ratio stayed more than
        :data:`~.stats.FORMAT_DROP` below the start's."""
        return format_fall_step({r["step"]: r[_EVAL_FORMAT] for r in self.records
                                 if r.get(_EVAL_FORMAT) is not None})

    @property
    def collapse_step(self) -> int | None:
        """The first step of a collapse (the detector's or a held-out fall), or ``None``."""
        steps = [s for s in (self.detector_step, self.drop_step) if s is not None]
        return min(steps) if steps else None

    def _logged(self, key: str) -> list[float]:
        return [r[key] for r in self.steps if r.get(key) is not None]

    def mean(self, key: str) -> float:
        """The mean of ``key`` over the training steps that logged it (NaN: none did)."""
        values = self._logged(key)
        return float(np.mean(values)) if values else math.nan

    def peak(self, key: str) -> float:
        """The largest ``key`` over the training steps that logged it (NaN: none did)."""
        values = self._logged(key)
        return float(np.max(values)) if values else math.nan


def _curve(episodes: Iterable[dict[str, Any]]) -> dict[int, dict[int, float]]:
    curve: dict[int, dict[int, float]] = {}
    for e in episodes:
        curve.setdefault(e["step"], {})[e["seed"]] = float(e["won"])
    return curve


def _rl_records(folder: Path, name: str) -> list[dict[str, Any]]:
    """The RL-phase records of a run's log ``name``, as the trainer wrote it or as a committed
    copy compressed it (``name.gz``); none when the run has neither."""
    for path in (folder / name, folder / f"{name}.gz"):
        if path.is_file():
            return [r for r in read_records(path) if r.get("phase") == "rl"]
    return []


def load_runs(root: str | Path) -> list[RunResult]:
    """Every finished run under ``root`` (a folder holding ``arena.json``). A run without a
    step-0 record gets its seed's starting-checkpoint evaluation as its step 0."""
    runs = []
    for path in sorted(Path(root).rglob(RECORD_FILE)):
        record = json.loads(path.read_text())
        records = _rl_records(path.parent, METRICS_FILE)
        episodes = _rl_records(path.parent, EVAL_EPISODES_FILE)
        last = max((e["step"] for e in episodes), default=None)
        final = path.parent / FINAL_FILE
        runs.append(RunResult(path.parent, record, records,
                              [e for e in episodes if e["step"] == last], _curve(episodes),
                              list(read_records(final)) if final.is_file() else []))
    start = {run.seed: run for run in runs if run.record["role"] == "start" and run.records}
    for run in runs:
        if run.seed in start and not any(r["step"] == 0 for r in run.records):
            run.records.insert(0, start[run.seed].records[0])
            run.curve = {0: start[run.seed].curve.get(0, {}), **run.curve}
    return runs


def final_temperatures(runs: Iterable[RunResult]) -> list[float]:
    """The temperatures of the runs' final evaluations, in the order first logged."""
    return list(dict.fromkeys(e["temperature"] for run in runs for e in run.final))


@dataclass
class ConfigResult:
    """One method × setting over its seeds."""

    method: str
    role: str
    setting: str
    overrides: list[str]
    runs: list[RunResult] = field(default_factory=list)

    def at(self, temperature: float) -> ConfigResult:
        """This configuration seen through its runs' final evaluations at ``temperature``."""
        return dataclasses.replace(self, runs=[run.at(temperature) for run in self.runs])

    def outcomes(self, key: str = "won") -> dict[tuple[int, int], float]:
        return {k: v for run in self.runs for k, v in run.outcomes(key).items()}

    def _mean_se(self, key: str) -> tuple[float, float]:
        return mean_se([list(run.outcomes(key).values()) for run in self.runs])

    @cached_property
    def success(self) -> tuple[float, float]:
        return self._mean_se("won")

    @cached_property
    def score(self) -> tuple[float, float]:
        return self._mean_se("score")

    @property
    def variance(self) -> float:
        """The worst seed's stability variance."""
        values = [run.variance for run in self.runs]
        return math.nan if any(math.isnan(v) for v in values) else max(values)

    def fired(self, step: str) -> list[tuple[int, int]]:
        """(seed, step) of every run whose ``step`` (a :class:`RunResult` step property:
        ``collapse_step``, ``detector_step``, ``drop_step``, ``format_fall_step``) is set."""
        steps = [(run.seed, getattr(run, step)) for run in self.runs]
        return [(seed, at) for seed, at in steps if at is not None]

    @property
    def collapses(self) -> list[tuple[int, int]]:
        """(seed, step) of every run that collapsed (:attr:`RunResult.collapse_step`)."""
        return self.fired("collapse_step")

    @property
    def stable(self) -> bool:
        return not self.collapses

    def mean(self, key: str) -> float:
        return float(np.mean([run.mean(key) for run in self.runs]))

    def peak(self, key: str) -> float:
        return float(np.max([run.peak(key) for run in self.runs]))

    def curve(self) -> list[dict[str, Any]]:
        return mean_records([run.records for run in self.runs])

    @property
    def seeds(self) -> list[int]:
        return [run.seed for run in self.runs]


def summarize(runs: Iterable[RunResult]) -> list[ConfigResult]:
    """The runs grouped by method and setting, ordered as ``METHODS`` then by role."""
    groups: dict[tuple[str, str], ConfigResult] = {}
    for run in runs:
        r = run.record
        key = (r["method"], r["setting"])
        if key not in groups:
            groups[key] = ConfigResult(r["method"], r["role"], r["setting"], r["overrides"])
        groups[key].runs.append(run)
    for group in groups.values():
        group.runs.sort(key=lambda run: run.seed)
    return sorted(groups.values(), key=lambda c: (_ORDER.get(c.method, len(_ORDER)),
                                                  c.method, _ROLE_ORDER[c.role], c.setting))


def select_configs(configs: list[ConfigResult]) -> dict[str, ConfigResult]:
    """Per method, the best stable configuration among its base and grid settings, else its
    base (else its first configuration other than the stress grid's)."""
    chosen: dict[str, ConfigResult] = {}
    for method in dict.fromkeys(c.method for c in configs if c.role not in ("start", "stress")):
        own = [c for c in configs if c.method == method and c.role != "stress"]
        candidates = [c for c in own if c.role in ("base", "grid")]
        best = select_best(candidates, success=lambda c: c.success[0], stable=lambda c: c.stable)
        base = next((c for c in own if c.role == "base"), own[0])
        chosen[method] = best or base
    return chosen


def viewed_at(configs: list[ConfigResult], temperature: float | None) -> list[ConfigResult]:
    """``configs`` through their final evaluation at ``temperature`` (``None``: as loaded, their
    last held-out evaluation); the stress grid's, which has none, as loaded."""
    if temperature is None:
        return configs
    return [c if c.role == "stress" else c.at(temperature) for c in configs]
