"""The stress grid: learning rate × staleness cells, what happened in each, and the counts that
judge findings 1 and 2.

Holds :class:`StressCell` (one learning rate × update mini-batches per rollout batch, with each
method's configuration there), :func:`stress_cells`, :func:`change_from_start` (a run's last
held-out evaluation against its own start, paired on the levels), :func:`collapse_counts` (per
method, the cells in which it collapsed among those where GRPO or GSPO stayed stable) and
:func:`stress_section` (the report's table).

A configuration here is a method in one cell over its seeds; it *collapsed* when one of its runs
did (the collapse detector fired, or held-out success dropped from its peak for good:
:attr:`~.results.RunResult.collapse_step`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.arena.figure3 import own_band_keys
from arlarena_baselines.arena.runner import saved_config
from arlarena_baselines.arena.stats import COLLAPSE_Z, paired_difference
from arlarena_baselines.arena.tables import num, pm, signed, table

__all__ = ["CALM_METHODS", "StressCell", "cell_grid", "change_from_start", "collapse_counts",
           "stress_cells", "stress_section"]

# A cell counts for the findings when one of these stays stable there: the cell is not so
# aggressive that every method falls.
CALM_METHODS = ("GRPO", "GSPO")


@dataclass
class StressCell:
    """One learning rate × update mini-batches per rollout batch; ``configs``: per method, its
    configuration (a :class:`~.results.ConfigResult`) in this cell."""

    lr: float
    mini_batches: int
    configs: dict[str, Any] = field(default_factory=dict)


def _cell_key(overrides: Sequence[str]) -> tuple[float, int]:
    values = dict(o.split("=", 1) for o in overrides)
    return float(values["rl.lr"]), int(values["rl.mini_batches"])


def stress_cells(configs: Sequence[Any]) -> list[StressCell]:
    """The stress grid's configurations by cell, by learning rate then mini-batches."""
    cells: dict[tuple[float, int], StressCell] = {}
    for config in configs:
        if config.role == "stress":
            key = _cell_key(config.overrides)
            cells.setdefault(key, StressCell(*key)).configs[config.method] = config
    return [cells[key] for key in sorted(cells)]


def change_from_start(config: Any) -> tuple[float, float]:
    """Mean and standard error of held-out success at each run's last evaluation minus at
    its step 0, paired on the (seed, level) episodes."""
    last: dict[tuple[int, int], float] = {}
    start: dict[tuple[int, int], float] = {}
    for run in config.runs:
        steps = sorted(run.curve)
        if len(steps) < 2 or steps[0] != 0:
            continue
        last |= {(run.seed, level): v for level, v in run.curve[steps[-1]].items()}
        start |= {(run.seed, level): v for level, v in run.curve[0].items()}
    mean, se, _ = paired_difference(last, start)
    return mean, se


def _held_out(config: Any, step: int | None) -> tuple[float, float]:
    """Mean held-out success over the runs at ``step`` (``None``: each run's last)."""
    values = []
    for run in config.runs:
        if run.curve:
            at = max(run.curve) if step is None else step
            values += list(run.curve.get(at, {}).values())
    return (sum(values) / len(values), float("nan")) if values else (float("nan"),) * 2


def collapse_counts(cells: Sequence[StressCell]) -> tuple[list[StressCell], dict[str, int]]:
    """The cells where GRPO or GSPO stayed stable, and per method how many of those it
    collapsed in."""
    calm = [cell for cell in cells
            if any(m in cell.configs and not cell.configs[m].collapses for m in CALM_METHODS)]
    methods = dict.fromkeys(m for cell in cells for m in cell.configs)
    return calm, {m: sum(1 for cell in calm if m in cell.configs and cell.configs[m].collapses)
                  for m in methods}


def _steps(config: Any, step: str) -> str:
    """``step (sSEED)`` of each run whose ``step`` is set, or ``–``."""
    return ", ".join(f"{at} (s{seed})" for seed, at in config.fired(step)) or "–"


def _budget(cells: Sequence[StressCell]) -> str:
    """What every stress run shared, from one run's saved config."""
    from arlarena_baselines.trainer.sampling import eval_sampling

    c = saved_config(next(iter(cells[0].configs.values())).runs[0].folder)
    if c is None:
        return ""
    r, e = c.rollout, c.eval
    return (f" Each run: {c.rl.steps} steps of {r.n_groups} levels × {r.group_size} rollouts; "
            f"held-out success on {e.episodes} levels at step 0 and every {e.every} steps, at "
            f"T = {eval_sampling(c).temperature:g}.")


def _counts_line(cells: Sequence[StressCell]) -> str:
    calm, counts = collapse_counts(cells)
    seeds = max(len(c.runs) for cell in cells for c in cell.configs.values())
    listed = ", ".join(f"{m} {n}" for m, n in counts.items())
    return (f"Collapsed cells, over the {len(calm)} of {len(cells)} cells where GRPO or GSPO "
            f"stays stable (seeds a cell: {seeds}): {listed}.")


def stress_section(configs: Sequence[Any], figure: str | None) -> list[str]:
    """The report's stress-grid section (nothing without stress runs)."""
    cells = stress_cells(configs)
    if not cells:
        return []
    rows = []
    for cell in cells:
        for method, c in cell.configs.items():
            rows.append([
                method, f"{cell.lr:g}", str(cell.mini_batches), str(len(c.runs)),
                f"{len(c.collapses)}/{len(c.runs)}", _steps(c, "detector_step"),
                _steps(c, "drop_step"), _steps(c, "format_fall_step"),
                f"{pm(_held_out(c, 0))} → {pm(_held_out(c, None))}", signed(change_from_start(c)),
                num(c.peak(mn.KL_OLD), 3), num(c.peak(mn.GRAD_NORM_MAX), 3),
                *(num(c.mean(k), 3) for k in own_band_keys(method)),
            ])
    intro = (
        "The stress axis of findings 1 and 2: short runs at a learning rate × a number of update "
        "mini-batches per rollout batch (1: on-policy; more: each step's later updates further "
        "off-policy), from the same start." + _budget(cells) + (
        " Per method and cell: how many runs collapsed; the step at which the collapse detector "
        "fired, from which held-out success stayed below its peak beyond "
        f"{COLLAPSE_Z:g} paired standard errors (see Stability), and from which the held-out "
        "valid-format ratio fell more than 0.1 for good (sN: seed N); held-out success at step 0 "
        "and at the end, and their paired difference; the peak over steps of KL(πθ‖πold) and of "
        "the gradient norm (before clipping); the mean over steps of the fraction of response "
        "tokens where the method's own band acts at A < 0 and at A > 0 (the study's Figure 3; "
        "see there). Without a KL term the detector reads KL to πold, which is 0 at one update a "
        "step (the ratio is 1 when the loss is taken), so it cannot fire there: held-out success "
        "tells."))
    lines = ["", "## Stress grid", "", intro, "", _counts_line(cells), "",
             *table(["method", "lr", "updates a step", "seeds", "collapsed", "detector",
                     "held-out dropped", "format fell", "held-out", "paired Δ vs start",
                     "peak KL old", "peak grad norm", "oob A<0", "oob A>0"], rows)]
    if figure is not None:
        lines += ["", f"![stress]({Path(figure).name})"]
    return lines


def cell_grid(cells: Sequence[StressCell], method: str
              ) -> tuple[list[float], list[int], Mapping[tuple[float, int], StressCell]]:
    """The learning rates, mini-batch counts and cells of one method, for the figure."""
    own = {(cell.lr, cell.mini_batches): cell for cell in cells if method in cell.configs}
    return (sorted({k[0] for k in own}), sorted({k[1] for k in own}), own)
