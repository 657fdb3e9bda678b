"""The arena report's ALFWorld section: GRPO, GiGPO and SAMPO against the BC start.

``make arena-alfworld`` trains each method on several seeds from ALFWorld's behaviour-cloned
start and ``scripts/alfworld_compare.py`` plays the start and every final model on the held-out
games of both eval splits, paired with the start, into ``summary.json``. This module reads that
file (:func:`read_summary`: a clear one-line :class:`ValueError` when it is missing, not the
comparison's, or has a method on fewer than two seeds) and writes its section of the report
(:func:`alfworld_section`): per split and temperature, each method's across-seed mean paired
difference against the start with its across-seed SE and SD, beside the mean paired SE, and the
study's findings 3 (GiGPO beats GRPO) and 5 (SAMPO is best) as :func:`.findings.judge` judges
them.

A method's runs enter the findings as :class:`MethodRuns`: one held-out success per training
seed, so that a difference between two methods is paired by seed (seed k against seed k, as the
Sokoban arena pairs them) and its standard error is the one across seeds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arlarena_baselines.arena.findings import judge
from arlarena_baselines.arena.stats import Z, mean_se
from arlarena_baselines.arena.tables import pm, table

__all__ = ["FINDINGS", "SUMMARY_FILE", "MethodRuns", "View", "alfworld_section", "read_summary"]

SUMMARY_FILE = "alfworld_summary.json"
"""The copy of the comparison's ``summary.json`` a report folder keeps (so that
``arlarena arena --report DIR`` rebuilds the section from DIR alone)."""
FINDINGS = (3, 5)
"""The study's findings the ALFWorld runs test (numbered as :func:`.findings.judge` orders
them)."""
SPLITS = {"ood": "OOD (out of distribution)", "id": "ID (in distribution)"}
_LABEL = re.compile(r"^(?P<method>[^/]+)/seed(?P<seed>\d+)$")


@dataclass(frozen=True)
class MethodRuns:
    """One method's runs on one split at one temperature, as :mod:`.findings` reads a
    configuration: per training seed, held-out success on the split's episodes and the paired
    difference against the start; ``across`` is the comparison's across-seed entry (``diff``,
    ``seed_sd``, ``seed_se``, ``paired_se``, ``seeds``)."""

    method: str
    by_seed: Mapping[int, Mapping[str, float]]
    across: Mapping[str, float]

    @property
    def success(self) -> tuple[float, float]:
        """Mean held-out success over the seeds and its standard error across them."""
        return mean_se([[run["success"]] for run in self.by_seed.values()])

    def outcomes(self, key: str = "success") -> dict[tuple[int, int], float]:
        """``{(seed, 0): value}``: one outcome per seed, so differences pair by seed."""
        return {(seed, 0): float(run[key]) for seed, run in self.by_seed.items()}


@dataclass(frozen=True)
class View:
    """One held-out split at one temperature: the start's success and each method's runs."""

    split: str
    temperature: str
    best: bool
    start: tuple[float, float]
    methods: dict[str, MethodRuns]


def _views(summary: Mapping[str, Any]) -> list[View]:
    """Every split (OOD first) at every temperature of the comparison."""
    order = [s for s in SPLITS if s in summary["splits"]]
    order += [s for s in summary["splits"] if s not in SPLITS]
    views = []
    for split in order:
        s = summary["splits"][split]
        for temperature, paired in s["paired"].items():
            runs: dict[str, dict[int, Mapping[str, float]]] = {}
            for label, row in paired["rl"].items():
                if "/" not in label:  # a single run (``make learn-alfworld``): no seeds
                    continue
                match = _LABEL.match(label)
                if match is None:
                    raise ValueError(f"run label {label!r} is not METHOD/seedK")
                runs.setdefault(match["method"], {})[int(match["seed"])] = {
                    "success": float(row["success"]), "diff": float(row["diff"])}
            methods = {m: MethodRuns(m, runs[m], paired["methods"][m]) for m in runs}
            views.append(View(split, temperature,
                              float(temperature) == float(s["best_temperature"]),
                              (float(paired["start"]["success"]), float(paired["start"]["se"])),
                              methods))
    return views


def read_summary(path: str | Path) -> dict[str, Any]:
    """The comparison's ``summary.json`` at ``path``, checked; a :class:`ValueError` of one
    line when it is missing, is not the comparison's (``scripts/alfworld_compare.py`` with
    runs labelled ``METHOD/seedK``), or has a method on fewer than 2 seeds (no across-seed
    error)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file (the ALFWorld comparison writes it: "
                         "make arena-alfworld)")
    what = f"{path} is not the ALFWorld comparison's summary.json (scripts/alfworld_compare.py)"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
        if "ALFWorld" not in summary["env"]:
            raise ValueError(f"env {summary['env']!r}")
        views = _views(summary)
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError,
            AttributeError) as err:
        raise ValueError(f"{what}: {type(err).__name__}: {err}") from None
    for view in views:
        if not view.methods:
            raise ValueError(f"{what}: no runs labelled METHOD/seedK on {view.split} at "
                             f"T = {view.temperature} (a single run's comparison, as "
                             "make learn-alfworld's?)")
        few = {m: len(r.by_seed) for m, r in view.methods.items() if len(r.by_seed) < 2}
        if few:
            raise ValueError(f"{path}: " + ", ".join(f"{m} has {n} seed" for m, n in few.items())
                             + f" on {view.split} at T = {view.temperature}; the across-seed "
                             "SE needs at least 2")
    return summary


def _per_seed(runs: MethodRuns) -> str:
    return ", ".join(f"{seed}: {run['diff']:+.3f}" for seed, run in sorted(runs.by_seed.items()))


def _methods_table(views: list[View]) -> list[str]:
    rows = []
    for view in views:
        t = f"{view.temperature}{' (best)' if view.best else ''}"
        rows.append([t, "start (BC)", "–", pm(view.start), "–", "–", "–", "–", "–"])
        for m, runs in view.methods.items():
            a = runs.across
            rows.append([t, m, str(a["seeds"]), pm(runs.success), f"{a['diff']:+.3f}",
                         *(f"{a[k]:.3f}" for k in ("seed_se", "seed_sd", "paired_se")),
                         _per_seed(runs)])
    return table(["T", "method", "seeds", "held-out success", "paired Δ vs start (mean)",
                  "SE across seeds", "SD across seeds", "mean paired SE", "Δ per seed"], rows)


def _findings_rows(view: View) -> list[list[str]]:
    found = judge([], view.methods)
    return [[str(i), found[i - 1].claim, f"{view.split.upper()}, T = {view.temperature}",
             f"**{found[i - 1].verdict}**", found[i - 1].evidence] for i in FINDINGS]


def alfworld_section(summary: Mapping[str, Any]) -> list[str]:
    """The report's ALFWorld section (markdown lines) from a :func:`read_summary` result."""
    views = _views(summary)
    seeds = sorted({len(r.by_seed) for v in views for r in v.methods.values()})
    lines = [
        "", "## ALFWorld: GRPO, GiGPO and SAMPO against the BC start", "",
        f"Env `{summary['env'].split('/')[-1]}`, template {summary['template']}, model: the "
        f"behaviour-cloned start `{summary['bc']}` (a small model trained from scratch, not "
        "the study's pretrained one; docs/learn-alfworld.md) and each method's RL runs from "
        f"it, {' or '.join(map(str, seeds))} training seeds (`make arena-alfworld`). Each run's "
        "final model and the start play the held-out games of both eval splits, paired game "
        "by game and sample by sample (scripts/alfworld_compare.py), at T = "
        f"{', '.join(dict.fromkeys(v.temperature for v in views))}; (best) marks the start's "
        "best temperature on the split (the best of its sweep on these games: biased upward "
        "for the start). Per method: held-out success, mean ± SE across seeds; the "
        "mean over seeds of its paired difference against the start, with the SE (SD / "
        "√seeds) and the SD of that difference across seeds, beside the mean of the runs' "
        "paired SEs (the evaluation's noise alone).",
    ]
    for split in dict.fromkeys(v.split for v in views):
        s = summary["splits"][split]
        panel = s["panel"]
        sweep = ", ".join(f"T = {t}: {pm((v['success'], v['se']))}"
                          for t, v in s["sweep"].items())
        lines += ["", f"### {SPLITS.get(split, split)}: `{panel['name']}`", "",
                  f"{panel['tasks']} episodes (panel hash {panel['hash']}). The start's sweep: "
                  f"{sweep}; its best temperature: {s['best_temperature']:g}.", "",
                  *_methods_table([v for v in views if v.split == split])]
    lines += ["", "### The study's findings on ALFWorld", "",
              "Judged as the Sokoban findings, with the across-seed standard error: each "
              "method's held-out success is paired seed by seed (n: the seeds paired), and a "
              f"difference counts beyond {Z:g} standard errors.", "",
              *table(["", "claim", "held-out", "verdict", "evidence"],
                     [row for view in views for row in _findings_rows(view)])]
    return lines
