"""The arena's report: the study's tables and figures from a folder of finished runs.

Holds :class:`RunResult` (one run folder: its ``arena.json`` and its ``metrics.jsonl``),
:class:`ConfigResult` (one method × setting over its seeds), :func:`load_runs`,
:func:`summarize`, :func:`select_configs` (per method, the best stable configuration of its
base and grid settings), :func:`report_markdown`, :func:`write_csv` and :func:`write_report`.

The tables:

- methods (the study's Table 3): the starting checkpoint (``checkpoint``, its own held-out
  evaluation), then per method its selected configuration's final held-out
  success and score ± standard error, the change against GRPO in percent, the paired
  difference of success against GRPO on the same (seed, level) episodes ± its standard error,
  the stability criterion (the variance of the training rollouts' success over the final 20%
  of steps; the worst seed's) and the collapse detector's verdict with the step it fired;
- stabilisers (the study's Table 4): CISPO and SAPO with a larger KL coefficient, with a larger
  update mini-batch, and with the sequence mask (``CISPO_SM``, ``SAPO_SM``), each against the
  method's base run;
- staleness: the IS-clipping methods at their base and at several times more update
  mini-batches per rollout batch, with the mean KL(πθ‖πold) and out-of-band token fractions;
- grid: every configuration tried per method, the selected one marked.

A configuration is stable when every seed's variance is at most ``threshold`` and the collapse
detector fired in none of them.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import shutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from arlarena_baselines.algos import METHODS
from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.arena.figures import (
    mean_records,
    plot_diagnostics,
    plot_kl_shares,
    plot_success,
)
from arlarena_baselines.arena.findings import Z, find, judge
from arlarena_baselines.arena.plan import IS_CLIPPING_METHODS, ROLES, STABILISED_METHODS, START
from arlarena_baselines.arena.runner import RECORD_FILE
from arlarena_baselines.arena.stats import (
    mean_se,
    paired_difference,
    select_best,
    stability_variance,
)
from arlarena_baselines.trainer import keys
from arlarena_baselines.trainer.config import TrainConfig, config_from_dict
from arlarena_baselines.trainer.tracking import EVAL_EPISODES_FILE, METRICS_FILE, read_metrics

__all__ = [
    "DEFAULT_THRESHOLD",
    "ConfigResult",
    "RunResult",
    "load_runs",
    "report_markdown",
    "select_configs",
    "summarize",
    "write_csv",
    "write_report",
]

DEFAULT_THRESHOLD = 0.01
REFERENCE = "GRPO"
FIGURES = ("success.png", "diagnostics.png", "kl_shares.png")
CONFIG_FILE = "rl_config.yaml"
_ORDER = {START: -1, **{name: i for i, name in enumerate(METHODS)}}
_ROLE_ORDER = {role: i for i, role in enumerate(ROLES)}


@dataclass
class RunResult:
    """One finished run: its ``arena.json`` record, its RL metrics step by step and the
    episodes of its final held-out evaluation (as the trainer logs them)."""

    folder: Path | None
    record: dict[str, Any]
    records: list[dict[str, Any]]
    episodes: list[dict[str, Any]]

    @property
    def seed(self) -> int:
        return int(self.record["seed"])

    def outcomes(self, key: str = "won") -> dict[tuple[int, int], float]:
        """The final held-out evaluation, ``{(seed, level seed): value}``."""
        return {(self.seed, e["seed"]): float(e[key]) for e in self.episodes}

    @property
    def steps(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["step"] > 0]

    @property
    def variance(self) -> float:
        """The stability criterion of this run."""
        return stability_variance([r[mn.SUCCESS_RATE] for r in self.steps
                                   if r.get(mn.SUCCESS_RATE) is not None])

    @property
    def collapse_step(self) -> int | None:
        """The first step at which the collapse detector fired, or ``None``."""
        return next((r["step"] for r in self.steps if r.get(keys.COLLAPSE)), None)

    def mean(self, key: str) -> float:
        values = [r[key] for r in self.steps if r.get(key) is not None]
        return float(np.mean(values)) if values else math.nan


def load_runs(root: str | Path) -> list[RunResult]:
    """Every finished run under ``root`` (a folder holding ``arena.json``). A run without a
    step-0 record gets its seed's starting-checkpoint evaluation as its step 0."""
    runs = []
    for path in sorted(Path(root).rglob(RECORD_FILE)):
        record = json.loads(path.read_text())
        records = [r for r in read_metrics(path.parent) if r.get("phase") == "rl"]
        logged = path.parent / EVAL_EPISODES_FILE
        episodes = [e for e in read_metrics(logged) if e.get("phase") == "rl"] if (
            logged.is_file()) else []
        last = max((e["step"] for e in episodes), default=None)
        runs.append(RunResult(path.parent, record, records,
                              [e for e in episodes if e["step"] == last]))
    start = {run.seed: run.records[0] for run in runs
             if run.record["role"] == "start" and run.records}
    for run in runs:
        if run.seed in start and not any(r["step"] == 0 for r in run.records):
            run.records.insert(0, start[run.seed])
    return runs


@dataclass
class ConfigResult:
    """One method × setting over its seeds."""

    method: str
    role: str
    setting: str
    overrides: list[str]
    runs: list[RunResult] = field(default_factory=list)
    stable_threshold: float = DEFAULT_THRESHOLD

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

    @property
    def collapses(self) -> list[tuple[int, int]]:
        """(seed, step) of every run in which the collapse detector fired."""
        return [(run.seed, run.collapse_step) for run in self.runs
                if run.collapse_step is not None]

    @property
    def stable(self) -> bool:
        return self.variance <= self.stable_threshold and not self.collapses

    def mean(self, key: str) -> float:
        return float(np.mean([run.mean(key) for run in self.runs]))

    def curve(self) -> list[dict[str, Any]]:
        return mean_records([run.records for run in self.runs])

    @property
    def seeds(self) -> list[int]:
        return [run.seed for run in self.runs]


def summarize(runs: Iterable[RunResult], threshold: float = DEFAULT_THRESHOLD
              ) -> list[ConfigResult]:
    """The runs grouped by method and setting, ordered as ``METHODS`` then by role."""
    groups: dict[tuple[str, str], ConfigResult] = {}
    for run in runs:
        r = run.record
        key = (r["method"], r["setting"])
        if key not in groups:
            groups[key] = ConfigResult(r["method"], r["role"], r["setting"], r["overrides"],
                                       stable_threshold=threshold)
        groups[key].runs.append(run)
    for group in groups.values():
        group.runs.sort(key=lambda run: run.seed)
    return sorted(groups.values(), key=lambda c: (_ORDER.get(c.method, len(_ORDER)),
                                                  c.method, _ROLE_ORDER[c.role], c.setting))


def select_configs(configs: list[ConfigResult]) -> dict[str, ConfigResult]:
    """Per method, the best stable configuration among its base and grid settings, else its
    base (else its first configuration)."""
    chosen: dict[str, ConfigResult] = {}
    for method in dict.fromkeys(c.method for c in configs if c.role != "start"):
        own = [c for c in configs if c.method == method]
        candidates = [c for c in own if c.role in ("base", "grid")]
        best = select_best(candidates, success=lambda c: c.success[0], stable=lambda c: c.stable)
        base = next((c for c in own if c.role == "base"), own[0])
        chosen[method] = best or base
    return chosen


# -- formatting -----------------------------------------------------------------------------
def _pm(value: tuple[float, float], digits: int = 3) -> str:
    mean, se = value
    if math.isnan(mean):
        return "–"
    return f"{mean:.{digits}f} ± {se:.{digits}f}" if not math.isnan(se) else f"{mean:.{digits}f}"


def _signed(value: tuple[float, float], digits: int = 3) -> str:
    mean, se = value
    if math.isnan(mean):
        return "–"
    return f"{mean:+.{digits}f} ± {se:.{digits}f}" if not math.isnan(se) else f"{mean:+.{digits}f}"


def _percent(value: float, reference: float) -> str:
    if math.isnan(value) or math.isnan(reference) or reference == 0:
        return "–"
    return f"{100.0 * (value - reference) / reference:+.1f}%"


def _num(value: float, digits: int = 4) -> str:
    return "–" if math.isnan(value) else f"{value:.{digits}g}"


def _collapse(config: ConfigResult) -> str:
    if not config.collapses:
        return "none"
    return ", ".join(f"step {step} (seed {seed})" for seed, step in config.collapses)


def _paired(config: ConfigResult, reference: ConfigResult | None) -> tuple[float, float]:
    if reference is None or reference is config:
        return math.nan, math.nan
    mean, se, _ = paired_difference(config.outcomes(), reference.outcomes())
    return mean, se


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in rows)]


def _row(config: ConfigResult, reference: ConfigResult | None) -> list[str]:
    """success, score, Δ%, paired Δ, variance, stable, collapse."""
    trained = config.role != "start"
    return [
        _pm(config.success), _pm(config.score),
        _percent(config.success[0], reference.success[0]) if reference and reference is not
        config else "–",
        _signed(_paired(config, reference)),
        _num(config.variance) if trained else "–",
        ("yes" if config.stable else "no") if trained else "–",
        _collapse(config) if trained else "–",
    ]


_ROW_HEADER = ["held-out success", "score", "Δ success", "paired Δ success", "stability var",
               "stable", "collapse"]


def _base_config(configs: list[ConfigResult]) -> TrainConfig | None:
    """The config a base run was trained with (every run shares all but its setting), or
    ``None`` when its folder lacks it."""
    base = next((c for c in configs if c.role == "base"), configs[0])
    path = base.runs[0].folder / CONFIG_FILE if base.runs[0].folder else None
    if path is None or not path.is_file():
        return None
    return config_from_dict(yaml.safe_load(path.read_text()))


def _noise_note(configs: list[ConfigResult], config: TrainConfig | None) -> str:
    """The variance one step's training success has from sampling alone, averaged over the
    base runs' steps: the floor under any run's stability variance. Between p(1−p)/episodes
    (independent episodes) and p(1−p)/levels (each level all won or all lost), because a
    step's rollouts share a few levels. ``config``: the runs' (:func:`_base_config`)."""
    floors = [r[mn.SUCCESS_RATE] * (1 - r[mn.SUCCESS_RATE])
              for c in configs if c.role == "base" for run in c.runs for r in run.steps
              if r.get(mn.SUCCESS_RATE) is not None]
    if not floors or config is None:
        return ""
    r = config.rollout
    spread = float(np.mean(floors))
    return (" For scale: the levels and the sampling alone give one step's training success a "
            f"variance between {spread / (r.n_groups * r.group_size):.2g} (p(1−p) / "
            f"{r.n_groups * r.group_size} episodes) and {spread / r.n_groups:.2g} (p(1−p) / "
            f"{r.n_groups} levels, if each level is all won or all lost), mean over the base "
            "runs' steps.")


def _settings_line(c: TrainConfig | None) -> list[str]:
    """What every run shared, from the runs' config (:func:`_base_config`; sampling as
    resolved for the env)."""
    from arlarena_baselines.trainer.sampling import eval_sampling, training_sampling

    if c is None:
        return []
    r, train, held = c.rollout, training_sampling(c), eval_sampling(c)
    return [
        f"Env `{r.env}`, model `{c.model.name}`; {c.rl.steps} steps of {r.n_groups} levels × "
        f"{r.group_size} rollouts at T = {train.temperature}, responses of up to "
        f"{train.max_new_tokens} tokens, update mini-batch {c.rl.mini_batch_size} step samples, "
        f"lr {c.rl.lr}; held-out: {c.eval.episodes} levels (seeds {c.eval.seed}…), "
        f"T = {held.temperature}, top-p {held.top_p}, top-k {held.top_k}.",
    ]


def _section(title: str, intro: str, groups: list[tuple[ConfigResult | None, list[Any]]],
             extra: tuple[str, ...] = (),
             cells: Callable[[ConfigResult], list[str]] = lambda c: []) -> list[str]:
    """A titled table: per group (a reference, its rows), a row per configuration against the
    reference (``None`` rows are skipped); ``cells`` fills the ``extra`` columns."""
    rows = [[c.method, c.setting, str(len(c.runs)), *_row(c, reference), *cells(c)]
            for reference, configs in groups for c in configs if c is not None]
    if not rows:
        return []
    return ["", f"## {title}", "", intro, "",
            *_table(["method", "setting", "seeds", *_ROW_HEADER, *extra], rows)]


def _findings(configs: list[ConfigResult], chosen: dict[str, ConfigResult]) -> list[str]:
    """The study's findings with this arena's verdicts (:mod:`.findings`)."""
    rows = [[str(i), f.claim, f"**{f.verdict}**", f.evidence]
            for i, f in enumerate(judge(configs, chosen), 1)]
    return ["", "## The study's findings", "",
            f"Verdicts: a difference counts beyond {Z:g} standard errors; a configuration "
            "collapses when the collapse detector fired in one of its runs. "
            "The GiGPO, DAPO and SAMPO claims compare the selected configurations.", "",
            *_table(["", "claim", "verdict", "evidence"], rows)]


def report_markdown(configs: list[ConfigResult], threshold: float = DEFAULT_THRESHOLD,
                    figures: Iterable[str] = FIGURES) -> str:
    """The report's markdown: settings, the four tables, the figures."""
    chosen = select_configs(configs)
    reference = chosen.get(REFERENCE)
    start = [c for c in configs if c.role == "start"]
    config = _base_config(configs)
    lines = ["# Arena", "", *_settings_line(config)]
    lines += _section(
        "Methods",
        f"`{START}`: the starting checkpoint, untrained. Per method, its selected configuration "
        "(the best stable one of its base and grid settings; stable: the variance of the "
        "training rollouts' success over the final 20% of steps is at most "
        f"{threshold} for every seed, and the collapse detector never fired). Δ success: "
        f"against {REFERENCE} in percent; paired Δ: the mean difference of success against "
        f"{REFERENCE} on the same (seed, level) episodes. ± is one standard error (over the "
        "held-out episodes, or across seeds when that is larger)." + _noise_note(configs, config),
        [(reference, [*start, *chosen.values()])],
    )
    lines += _findings(configs, chosen)
    lines += _section(
        "Stabilisers (CISPO, SAPO)",
        "Each against the method's base run (Δ and paired Δ): a larger KL coefficient, a larger "
        "update mini-batch, and the sequence mask (the `_SM` method).",
        [(find(configs, m, "base"),
          [find(configs, m, "base"),
           *(c for c in configs if c.method == m and c.role == "stabiliser"),
           find(configs, f"{m}_SM", "base")])
         for m in STABILISED_METHODS
         if any(c.method == m and c.role == "stabiliser" for c in configs)],
    )
    lines += _section(
        "Staleness",
        "The IS-clipping methods at their base and with several times more update mini-batches "
        "per rollout batch (Δ and paired Δ against the base). Means over the steps: updates per "
        "step, KL(πθ‖πold), the token fractions with the ratio below 1-ε_low at A < 0 and above "
        "1+ε_high at A > 0.",
        [(find(configs, m, "base"), [c for c in configs if c.method == m
                                      and c.role in ("base", "staleness")])
         for m in IS_CLIPPING_METHODS
         if any(c.method == m and c.role == "staleness" for c in configs)],
        ("updates", "KL old", "oob low", "oob high"),
        lambda c: [_num(c.mean(k), 3) for k in (keys.UPDATES, mn.KL_OLD, mn.STAB_OOB_LOW_FRAC,
                                                mn.STAB_OOB_HIGH_FRAC)],
    )
    lines += _section(
        "Grid search",
        "Every configuration tried (Δ and paired Δ against the method's base); ✓ marks the "
        "selected one.",
        [(find(configs, m, "base"), [c for c in configs if c.method == m
                                      and c.role in ("base", "grid")])
         for m in dict.fromkeys(c.method for c in configs if c.role == "grid")],
        ("selected",),
        lambda c: ["✓" if chosen.get(c.method) is c else ""],
    )
    lines += ["", "## Figures", ""]
    lines += [f"![{Path(f).stem}]({f})" for f in figures]
    return "\n".join(lines) + "\n"


CSV_FIELDS = ["method", "role", "setting", "overrides", "seeds", "selected", "success",
              "success_se", "score", "score_se", "delta_vs_grpo_pct", "paired_delta_vs_grpo",
              "paired_delta_vs_grpo_se", "stability_var", "stable", "collapse_steps",
              "updates_mean", "kl_old_mean", "kl_ref_mean", "oob_low_mean", "oob_high_mean"]


def write_csv(configs: list[ConfigResult], path: Path) -> Path:
    """One row per method × setting (``CSV_FIELDS``)."""
    chosen = select_configs(configs)
    reference = chosen.get(REFERENCE)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, CSV_FIELDS)
        writer.writeheader()
        for c in configs:
            paired = _paired(c, reference)
            change = (100.0 * (c.success[0] - reference.success[0]) / reference.success[0]
                      if reference is not None and reference.success[0] else math.nan)
            writer.writerow({
                "method": c.method, "role": c.role, "setting": c.setting,
                "overrides": " ".join(c.overrides), "seeds": " ".join(map(str, c.seeds)),
                "selected": chosen.get(c.method) is c,
                "success": c.success[0], "success_se": c.success[1],
                "score": c.score[0], "score_se": c.score[1],
                "delta_vs_grpo_pct": change, "paired_delta_vs_grpo": paired[0],
                "paired_delta_vs_grpo_se": paired[1], "stability_var": c.variance,
                "stable": c.stable,
                "collapse_steps": " ".join(f"{seed}:{step}" for seed, step in c.collapses),
                "updates_mean": c.mean(keys.UPDATES), "kl_old_mean": c.mean(mn.KL_OLD),
                "kl_ref_mean": c.mean(mn.KL_REF), "oob_low_mean": c.mean(mn.STAB_OOB_LOW_FRAC),
                "oob_high_mean": c.mean(mn.STAB_OOB_HIGH_FRAC),
            })
    return path


def _copy_runs(runs: list[RunResult], root: Path, out: Path) -> None:
    """Copy each run's small files (record, metrics, episodes, config) to the same place under
    ``out``, so that ``out`` rebuilds this report on its own."""
    for run in runs:
        target = out / run.folder.relative_to(root)
        target.mkdir(parents=True, exist_ok=True)
        for name in (RECORD_FILE, METRICS_FILE, EVAL_EPISODES_FILE, CONFIG_FILE):
            if (run.folder / name).is_file():
                shutil.copy2(run.folder / name, target / name)


def write_report(root: str | Path, out: str | Path | None = None,
                 threshold: float = DEFAULT_THRESHOLD) -> list[Path]:
    """Write ``arena.md``, ``arena.csv`` and the figures for the runs under ``root`` into
    ``out`` (default ``root``); a different ``out`` also gets the runs' small files. Return
    the written paths."""
    root = Path(root)
    out = Path(out) if out is not None else root
    runs = load_runs(root)
    if not runs:
        raise ValueError(f"{root} holds no finished arena run ({RECORD_FILE})")
    if out.resolve() != root.resolve():
        _copy_runs(runs, root, out)
    configs = summarize(runs, threshold)
    chosen = select_configs(configs)
    curves = {m: c.curve() for m, c in chosen.items()}
    shares = {}
    for method in STABILISED_METHODS:
        for name in (method, f"{method}_SM"):
            config = find(configs, name, "base")
            shares[name] = config.curve() if config is not None else None
    out.mkdir(parents=True, exist_ok=True)
    figures = []
    if importlib.util.find_spec("matplotlib") is None:
        print("matplotlib is not installed: the report has no figures "
              "(pip install 'arlarena[plot]')", file=sys.stderr)
    else:
        figures = [plot_success(curves, out / FIGURES[0]),
                   plot_diagnostics(curves, out / FIGURES[1]),
                   plot_kl_shares(shares, out / FIGURES[2])]
    markdown = out / "arena.md"
    markdown.write_text(report_markdown(configs, threshold, [f.name for f in figures]),
                        encoding="utf-8")
    return [markdown, write_csv(configs, out / "arena.csv"), *figures]
