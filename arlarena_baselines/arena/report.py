"""The arena's report: the study's tables and figures from a folder of finished runs.

Holds :func:`report_markdown`, :func:`write_csv` and :func:`write_report`; the runs themselves
are loaded and grouped by :mod:`.results`. The tables:

- methods (the study's Table 3), once per final temperature: the starting checkpoint
  (``checkpoint``), then per method its selected configuration's held-out success and score
  ± standard error, the change against GRPO in percent, the paired differences of success
  against GRPO and against the start on the same (seed, level) episodes ± their standard
  errors, whether it beat the start, the study's stability variance (quoted) and the
  collapses;
- stabilisers (the study's Table 4): CISPO and SAPO with a larger KL coefficient, with a larger
  update mini-batch, and with the sequence mask (``CISPO_SM``, ``SAPO_SM``), each against the
  method's base run;
- staleness: the IS-clipping methods at their base and at several times more update
  mini-batches per rollout batch, with the mean KL(πθ‖πold) and out-of-band token fractions;
- grid: every configuration tried per method, the selected one marked;
- stress grid (:mod:`.stress`): per method and cell, the collapses, the steps at which
  held-out success and the valid-format ratio fell, the peak KL to π_old and gradient norm,
  and the out-of-band token fractions by advantage sign; its figure;
- ALFWorld (:mod:`.alfworld`), when the report is given the ALFWorld comparison's summary
  (``alfworld``) or its folder keeps a copy of one (:data:`~.alfworld.SUMMARY_FILE`);
- beside the other block (:mod:`.blocks`), when the runs are one block of a grid made from two
  starts and the report is given the other block's folder (``beside``) or keeps its path
  (:data:`~.blocks.BESIDE_FILE`).
"""

from __future__ import annotations

import csv
import importlib.util
import math
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.arena.alfworld import SUMMARY_FILE, alfworld_section, read_summary
from arlarena_baselines.arena.blocks import beside_folder, beside_section, keep_beside, read_block
from arlarena_baselines.arena.equivalence import equivalence_section
from arlarena_baselines.arena.figure3 import figure3_section, kl_shares_logged, own_band_keys
from arlarena_baselines.arena.figures import (
    plot_diagnostics,
    plot_kl_shares,
    plot_stress,
    plot_success,
)
from arlarena_baselines.arena.findings import by_difference, find, judge
from arlarena_baselines.arena.plan import IS_CLIPPING_METHODS, STABILISED_METHODS, START
from arlarena_baselines.arena.results import (
    ConfigResult,
    RunResult,
    final_temperatures,
    load_runs,
    select_configs,
    summarize,
    viewed_at,
)
from arlarena_baselines.arena.runner import (
    FINAL_FILE,
    RECORD_FILE,
    saved_config,
)
from arlarena_baselines.arena.stability import mean_drop, stability_section
from arlarena_baselines.arena.stats import COLLAPSE_Z, Z, paired_difference
from arlarena_baselines.arena.stress import change_from_start, stress_cells, stress_section
from arlarena_baselines.arena.tables import num, pm, signed, table
from arlarena_baselines.trainer.checkpoint import atomic_write_gzip
from arlarena_baselines.trainer.config import TrainConfig
from arlarena_baselines.trainer.runs import config_file
from arlarena_baselines.trainer.tracking import EVAL_EPISODES_FILE, METRICS_FILE

__all__ = ["CSV_FIELDS", "report_markdown", "write_csv", "write_report"]

REFERENCE = "GRPO"
FIGURES = ("success.png", "diagnostics.png")
KL_FIGURE = "kl_shares.png"
STRESS_FIGURE = "stress.png"


# -- formatting -----------------------------------------------------------------------------
def _percent(value: float, reference: float) -> str:
    if math.isnan(value) or math.isnan(reference) or reference == 0:
        return "–"
    return f"{100.0 * (value - reference) / reference:+.1f}%"


def _collapse(config: ConfigResult) -> str:
    """Each collapse's step, seed and sign (the detector, or held-out success falling)."""
    if not config.collapses:
        return "none"
    return ", ".join(
        f"step {run.collapse_step} (seed {run.seed}, "
        f"{'detector' if run.detector_step == run.collapse_step else 'held-out dropped'})"
        for run in config.runs if run.collapse_step is not None)


def _paired(config: ConfigResult, reference: ConfigResult | None) -> tuple[float, float]:
    if reference is None or reference is config:
        return math.nan, math.nan
    mean, se, _ = paired_difference(config.outcomes(), reference.outcomes())
    return mean, se


def _row(config: ConfigResult, reference: ConfigResult | None) -> list[str]:
    """success, score, Δ%, paired Δ, variance, stable, collapse."""
    trained = config.role != "start"
    return [
        pm(config.success), pm(config.score),
        _percent(config.success[0], reference.success[0]) if reference and reference is not
        config else "–",
        signed(_paired(config, reference)),
        num(config.variance) if trained else "–",
        ("yes" if config.stable else "no") if trained else "–",
        _collapse(config) if trained else "–",
    ]


_ROW_HEADER = ["held-out success", "score", "Δ success", "paired Δ success", "stability var",
               "stable", "collapse"]
_BEATS = {"holds": "yes", "fails": "no, worse", "within noise": "within noise"}


def _against_start(config: ConfigResult, start: ConfigResult | None) -> list[str]:
    """The paired difference against the start and whether it is beyond Z standard errors."""
    if start is None or config.role == "start":
        return ["–", "–"]
    mean, se = _paired(config, start)
    return [signed((mean, se)), _BEATS[by_difference(mean, se)] if not math.isnan(se) else "–"]


def _base_config(configs: list[ConfigResult]) -> TrainConfig | None:
    """The config a base run was trained with (every run shares all but its setting), or
    ``None`` when its folder lacks it."""
    base = next((c for c in configs if c.role == "base"), configs[0])
    return saved_config(base.runs[0].folder)


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
    return (" The stability variance (the study's criterion: the variance of the training "
            "rollouts' success over the final 20% of steps, the worst seed's) is quoted, not "
            "judged on: the levels and the sampling alone give one step's training success a "
            f"variance between {spread / (r.n_groups * r.group_size):.2g} (p(1−p) / "
            f"{r.n_groups * r.group_size} episodes) and {spread / r.n_groups:.2g} (p(1−p) / "
            f"{r.n_groups} levels, if each level is all won or all lost), mean over the base "
            "runs' steps.")


def _settings_line(c: TrainConfig | None, final: list[float], final_levels: int) -> list[str]:
    """What every run shared, from the runs' config (:func:`_base_config`; sampling as
    resolved for the env)."""
    from arlarena_baselines.trainer.sampling import eval_sampling, training_sampling

    if c is None:
        return []
    r, train, held = c.rollout, training_sampling(c), eval_sampling(c)
    updates = (f"{c.rl.mini_batches} update mini-batches a step" if c.rl.mini_batches else
               "one update a step (on-policy)" if c.rl.mini_batch_size is None else
               f"update mini-batch {c.rl.mini_batch_size} step samples")
    every = f", every {c.eval.every} steps" if c.eval.every else ""
    line = (f"Env `{r.env}`, model `{c.model.name}`; {c.rl.steps} steps of {r.n_groups} levels "
            f"× {r.group_size} rollouts at T = {train.temperature}, responses of up to "
            f"{train.max_new_tokens} tokens, {updates}, lr {c.rl.lr}; held-out curve: "
            f"{c.eval.episodes} levels (seeds {c.eval.seed}…){every}, T = {held.temperature}, "
            f"top-p {held.top_p}, top-k {held.top_k}.")
    if final:
        line += (f" Final evaluation of every run and of the start: {final_levels:,} held-out "
                 f"levels at T = {' and T = '.join(f'{t:g}' for t in final)} (top-p "
                 f"{held.top_p}, top-k {held.top_k}).")
    return [line]


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
            *table(["method", "setting", "seeds", *_ROW_HEADER, *extra], rows)]


def _curve_name(c: TrainConfig | None) -> str:
    """The held-out curve's evaluations, from the runs' config (:func:`_base_config`)."""
    from arlarena_baselines.trainer.sampling import eval_sampling

    if c is None:
        return "the held-out evaluations during training"
    every = f" every {c.eval.every} steps" if c.eval.every else " at the end"
    return (f"{c.eval.episodes} levels at step 0 and{every}, at "
            f"T = {eval_sampling(c).temperature:g}")


def _view_name(temperature: float | None, final_levels: int) -> str:
    return ("the last held-out evaluation" if temperature is None
            else f"T = {temperature:g}, {final_levels:,} levels")


def _methods(configs: list[ConfigResult], temperature: float | None, final_levels: int,
             config: TrainConfig | None, first: bool) -> list[str]:
    """The methods table of one held-out view; ``first``: with the full introduction."""
    chosen = select_configs(configs)
    reference = chosen.get(REFERENCE)
    start = next((c for c in configs if c.role == "start"), None)
    title = "Methods" if temperature is None else f"Methods at T = {temperature:g}"
    intro = (
        f"Held-out: {_view_name(temperature, final_levels)}. `{START}`: the starting "
        "checkpoint, untrained. Per method, its selected configuration (the best stable one of "
        "its base and grid settings; stable: no run collapsed, i.e. the collapse detector "
        "never fired and held-out success never dropped from its peak for good beyond "
        f"{COLLAPSE_Z:g} paired standard errors: see Stability). Δ success: "
        f"against {REFERENCE} in percent; paired Δ: the mean difference of success against "
        f"{REFERENCE}, and against the start, on the same (seed, level) episodes; beats start: "
        f"beyond {Z:g} standard errors. ± is one standard error (over the held-out episodes, "
        "or across seeds when that is larger)." + _noise_note(configs, config)
    ) if first else f"Held-out: {_view_name(temperature, final_levels)}; columns as above."
    return _section(
        title, intro,
        [(reference, [*([start] if start else []), *chosen.values()])],
        ("paired Δ vs start", "beats start"),
        lambda c: _against_start(c, start),
    )


def _findings(configs: list[ConfigResult], views: list[float | None],
              final_levels: int) -> list[str]:
    """The study's findings with this arena's verdicts (:mod:`.findings`): the held-out ones
    once per view, those of the stress grid once."""
    cells = stress_cells(configs)
    rows = []
    for k, view in enumerate(views):
        seen = viewed_at(configs, view)
        for i, finding in enumerate(judge(seen, select_configs(seen), cells), 1):
            stress = bool(cells) and i <= 2
            if stress and k > 0:
                continue
            where = "stress grid" if stress else _view_name(view, final_levels)
            rows.append((i, k, [str(i), finding.claim, where, f"**{finding.verdict}**",
                                finding.evidence]))
    return ["", "## The study's findings", "",
            f"Verdicts: a difference counts beyond {Z:g} standard errors; a configuration "
            "collapses when one of its runs did. The GiGPO, DAPO and SAMPO claims compare the "
            "selected configurations; findings 1 and 2 are judged on the stress grid where the "
            "arena has one. The evidence gives each effect, its standard error, the paired "
            "episodes (n), the seeds they come from and the runs behind it (a difference is "
            "paired on the seeds all its methods share).", "",
            *table(["", "claim", "held-out", "verdict", "evidence"],
                   [row for _, _, row in sorted(rows, key=lambda r: r[:2])])]


def report_markdown(configs: list[ConfigResult], figures: Iterable[str] = FIGURES,
                    temperatures: Iterable[float] = (), final_levels: int = 0,
                    alfworld: Sequence[str] = (), beside: Sequence[str] = ()) -> str:
    """The report's markdown: settings, the tables, the figures. ``temperatures``: those of
    the runs' final evaluations (none: the tables read the last held-out evaluation);
    ``alfworld``: the ALFWorld section's lines (:func:`~.alfworld.alfworld_section`) and
    ``beside``: the section across two blocks (:func:`~.blocks.beside_section`), after the
    findings."""
    views: list[float | None] = list(temperatures) or [None]
    figures = list(figures)
    config = _base_config(configs)
    lines = ["# Arena", "", *_settings_line(config, list(temperatures), final_levels)]
    for k, view in enumerate(views):
        lines += _methods(viewed_at(configs, view), view, final_levels, config, k == 0)
    lines += _findings(configs, views, final_levels)
    lines += alfworld
    lines += beside
    lines += equivalence_section(configs)
    lines += stability_section(configs, _curve_name(config))
    lines += figure3_section(configs, KL_FIGURE if KL_FIGURE in figures else None)
    lines += stress_section(configs, STRESS_FIGURE if STRESS_FIGURE in figures else None)
    first = viewed_at(configs, views[0])
    lines += _section(
        "Stabilisers (CISPO, SAPO)",
        f"Held-out: {_view_name(views[0], final_levels)}. Each against the method's base run "
        "(Δ and paired Δ): a larger KL coefficient, a larger update mini-batch, and the "
        "sequence mask (the `_SM` method).",
        [(find(first, m, "base"),
          [find(first, m, "base"),
           *(c for c in first if c.method == m and c.role == "stabiliser"),
           find(first, f"{m}_SM", "base")])
         for m in STABILISED_METHODS
         if any(c.method == m and c.role == "stabiliser" for c in first)],
    )
    lines += _section(
        "Staleness",
        f"Held-out: {_view_name(views[0], final_levels)}. The IS-clipping methods at their "
        "base and with several times more update mini-batches per rollout batch (Δ and paired "
        "Δ against the base). Means over the steps: updates per step, KL(πθ‖πold), the token "
        "fractions where the method's own band acts at A < 0 and at A > 0 (see Figure 3).",
        [(find(first, m, "base"), [c for c in first if c.method == m
                                    and c.role in ("base", "staleness")])
         for m in IS_CLIPPING_METHODS
         if any(c.method == m and c.role == "staleness" for c in first)],
        ("updates", "KL old", "oob A<0", "oob A>0"),
        lambda c: [num(c.mean(k), 3) for k in (mn.UPDATES, mn.KL_OLD,
                                               *own_band_keys(c.method))],
    )
    chosen = select_configs(first)
    lines += _section(
        "Grid search",
        f"Held-out: {_view_name(views[0], final_levels)}. Every configuration tried (Δ and "
        "paired Δ against the method's base); ✓ marks the selected one.",
        [(find(first, m, "base"), [c for c in first if c.method == m
                                    and c.role in ("base", "grid")])
         for m in dict.fromkeys(c.method for c in first if c.role == "grid")],
        ("selected",),
        lambda c: ["✓" if chosen.get(c.method) is c else ""],
    )
    lines += ["", "## Figures", ""]
    lines += [f"![{Path(f).stem}]({f})" for f in figures if f not in (STRESS_FIGURE, KL_FIGURE)]
    return "\n".join(lines) + "\n"


# paired_delta_vs_start: a stress row's last held-out evaluation against its runs' own step 0;
# any other row's held-out outcomes against the start's.
CSV_FIELDS = ["method", "role", "setting", "overrides", "seeds", "held_out", "selected",
              "success", "success_se", "score", "score_se", "delta_vs_grpo_pct",
              "paired_delta_vs_grpo", "paired_delta_vs_grpo_se", "paired_delta_vs_start",
              "paired_delta_vs_start_se", "stability_var", "stable", "collapse_steps",
              "detector_steps", "drop_steps", "format_fall_steps", "drop_from_peak",
              "drop_from_peak_se", "updates_mean", "kl_old_mean", "kl_old_peak", "kl_ref_mean",
              "kl_ref_peak", "grad_norm_peak", "oob_own_neg_mean", "oob_own_pos_mean",
              "oob_pos_mean", "oob_neg_mean"]


def _steps(config: ConfigResult, step: str) -> str:
    """``seed:step`` of each run whose ``step`` is set (:meth:`ConfigResult.fired`)."""
    return " ".join(f"{seed}:{at}" for seed, at in config.fired(step))


def write_csv(configs: list[ConfigResult], path: Path, temperatures: Iterable[float] = ()
              ) -> Path:
    """One row per method × setting and held-out view (``CSV_FIELDS``); the stress grid's
    rows, once, read their last held-out evaluation."""
    temperatures = list(temperatures)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, CSV_FIELDS)
        writer.writeheader()
        for view in list(temperatures) or [None]:
            seen = viewed_at(configs, view)
            chosen = select_configs(seen)
            reference = chosen.get(REFERENCE)
            start = next((c for c in seen if c.role == "start"), None)
            for c in seen:
                if view is not None and c.role == "stress" and view != temperatures[0]:
                    continue
                # A stress run is set against its own start, never against GRPO's run.
                stress = c.role == "stress"
                paired = (math.nan, math.nan) if stress else _paired(c, reference)
                to_start = change_from_start(c) if stress else (
                    _paired(c, start) if c.role != "start" else (math.nan, math.nan))
                drop = mean_drop(c)
                change = (100.0 * (c.success[0] - reference.success[0]) / reference.success[0]
                          if not stress and reference is not None and reference.success[0]
                          else math.nan)
                writer.writerow({
                    "method": c.method, "role": c.role, "setting": c.setting,
                    "overrides": " ".join(c.overrides), "seeds": " ".join(map(str, c.seeds)),
                    "held_out": "last" if view is None or c.role == "stress" else f"T={view:g}",
                    "selected": chosen.get(c.method) is c,
                    "success": c.success[0], "success_se": c.success[1],
                    "score": c.score[0], "score_se": c.score[1],
                    "delta_vs_grpo_pct": change, "paired_delta_vs_grpo": paired[0],
                    "paired_delta_vs_grpo_se": paired[1], "paired_delta_vs_start": to_start[0],
                    "paired_delta_vs_start_se": to_start[1], "stability_var": c.variance,
                    "stable": c.stable,
                    "collapse_steps": _steps(c, "collapse_step"),
                    "detector_steps": _steps(c, "detector_step"),
                    "drop_steps": _steps(c, "drop_step"),
                    "format_fall_steps": _steps(c, "format_fall_step"),
                    "drop_from_peak": drop[0], "drop_from_peak_se": drop[1],
                    "updates_mean": c.mean(mn.UPDATES), "kl_old_mean": c.mean(mn.KL_OLD),
                    "kl_old_peak": c.peak(mn.KL_OLD), "kl_ref_mean": c.mean(mn.KL_REF),
                    "kl_ref_peak": c.peak(mn.KL_REF),
                    "grad_norm_peak": c.peak(mn.GRAD_NORM_MAX),
                    "oob_own_neg_mean": c.mean(own_band_keys(c.method)[0]),
                    "oob_own_pos_mean": c.mean(own_band_keys(c.method)[1]),
                    "oob_pos_mean": c.mean(mn.OOB_POS_FRAC),
                    "oob_neg_mean": c.mean(mn.OOB_NEG_FRAC),
                })
    return path


def _copy_runs(runs: list[RunResult], root: Path, out: Path) -> None:
    """Copy each run's small files (record, metrics, episodes, config) to the same place under
    ``out``, so that ``out`` rebuilds this report on its own. The two logs go gzip-compressed
    (a twentieth of their size; no timestamp, so the same run gives the same bytes)."""
    logs = (METRICS_FILE, EVAL_EPISODES_FILE)
    for run in runs:
        target = out / run.folder.relative_to(root)
        target.mkdir(parents=True, exist_ok=True)
        for name in (RECORD_FILE, FINAL_FILE, config_file(run.folder, "rl").name,
                     *(f"{log}.gz" for log in logs)):
            if (run.folder / name).is_file():
                shutil.copy2(run.folder / name, target / name)
        for log in logs:
            if (run.folder / log).is_file():
                atomic_write_gzip(target / f"{log}.gz", (run.folder / log).read_bytes())


def alfworld_summary(root: Path, out: Path, given: str | Path | None) -> Path | None:
    """The ALFWorld comparison's summary a report reads: ``given``, else the copy ``root``
    keeps, else the one ``out`` keeps (a report rebuilt into its folder keeps its ALFWorld
    section), else ``None`` (no section)."""
    if given is not None:
        return Path(given)
    return next((p for p in (root / SUMMARY_FILE, out / SUMMARY_FILE) if p.is_file()), None)


def write_report(root: str | Path, out: str | Path | None = None,
                 alfworld: str | Path | None = None,
                 beside: str | Path | None = None) -> list[Path]:
    """Write ``arena.md``, ``arena.csv`` and the figures for the runs under ``root`` into
    ``out`` (default ``root``); a different ``out`` also gets the runs' small files. With
    ``alfworld`` (the ALFWorld comparison's ``summary.json``), or a copy of it kept in
    ``root`` or ``out`` (:func:`alfworld_summary`), the report has its ALFWorld section and
    ``out`` keeps the copy. With ``beside`` (the report folder of the grid's other block), or
    its path kept in ``root`` or ``out`` (:func:`~.blocks.beside_folder`), the report has the
    section across the two blocks and ``out`` keeps the path. Return the written paths."""
    root = Path(root)
    out = Path(out) if out is not None else root
    summary = alfworld_summary(root, out, alfworld)
    section = alfworld_section(read_summary(summary)) if summary is not None else []
    runs = load_runs(root)
    if not runs:
        raise ValueError(f"{root} holds no finished arena run ({RECORD_FILE})")
    if out.resolve() != root.resolve():
        _copy_runs(runs, root, out)
    temperatures = final_temperatures(runs)
    final_levels = max((len(run.at(t).episodes) for run in runs for t in temperatures),
                       default=0)
    configs = summarize(runs)
    other = beside_folder(root, out, beside)
    across = (beside_section(read_block(root, configs), read_block(other))
              if other is not None else [])
    chosen = select_configs(viewed_at(configs, temperatures[0] if temperatures else None))
    curves = {m: c.curve() for m, c in chosen.items()}
    # One panel per configuration that logged the KL shares (the stress grid's aside).
    shares = {f"{c.method} {c.setting}": c.curve() for c in configs
              if c.role not in ("start", "stress") and kl_shares_logged(c)}
    out.mkdir(parents=True, exist_ok=True)
    figures = []
    if importlib.util.find_spec("matplotlib") is None:
        print("matplotlib is not installed: the report has no figures "
              "(pip install 'arlarena[plot]')", file=sys.stderr)
    else:
        figures = [plot_success(curves, out / FIGURES[0]),
                   plot_diagnostics(curves, out / FIGURES[1])]
        if shares:  # without a reference model there are no shares to draw
            figures.append(plot_kl_shares(shares, out / KL_FIGURE))
        cells = stress_cells(configs)
        if cells:
            figures.append(plot_stress(cells, out / STRESS_FIGURE))
    markdown = out / "arena.md"
    markdown.write_text(report_markdown(configs, [f.name for f in figures], temperatures,
                                        final_levels, section, across), encoding="utf-8")
    kept = []
    if summary is not None:
        kept = [out / SUMMARY_FILE]
        if summary.resolve() != kept[0].resolve():
            shutil.copyfile(summary, kept[0])
    if other is not None:
        kept.append(keep_beside(other, out))
    return [markdown, write_csv(configs, out / "arena.csv", temperatures), *figures, *kept]
