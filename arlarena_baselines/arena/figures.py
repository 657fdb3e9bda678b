"""The arena's figures, drawn to PNG: every method on one set of axes.

Holds :func:`mean_records` (a configuration's metrics averaged over its seeds, step by step),
:func:`plot_success` (held-out and training success of every method), :func:`plot_diagnostics`
(KL to π_old and π_ref, gradient norm, valid-format ratio, out-of-band token fractions below
and above the band) and :func:`plot_kl_shares` (the share of the KL to π_ref carried by each of
the 8 token groups, one panel per configuration that logged them, as the study's Figure 3
sets CISPO beside CISPO_SM and SAPO beside SAPO_SM; the panel is the one of ``arlarena plot``)
and :func:`plot_stress`
(the stress grid: per method, each learning rate × staleness cell coloured by the change of
held-out success from the start, its collapses marked). Needs matplotlib.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.trainer.plots import (
    plot_curves,
    plot_kl_share_bars,
    pyplot,
    save_figure,
)

__all__ = ["mean_records", "plot_diagnostics", "plot_kl_shares", "plot_stress", "plot_success"]

Records = list[dict[str, Any]]

SUCCESS_PANELS = (("held-out success (T = eval.temperature)", mn.eval_key(mn.SUCCESS_RATE)),
                  ("training rollouts' success", mn.SUCCESS_RATE))
DIAGNOSTIC_PANELS = (
    ("KL(πθ‖πold)", mn.KL_OLD),
    ("k3 KL to πref", mn.KL_REF),
    ("gradient norm", mn.GRAD_NORM),
    ("valid-format ratio (training rollouts)", mn.VALID_FORMAT_RATIO),
    ("ratio below 1-ε_low, A<0 (token fraction)", mn.STAB_OOB_LOW_FRAC),
    ("ratio above 1+ε_high, A>0 (token fraction)", mn.STAB_OOB_HIGH_FRAC),
)


def mean_records(runs: Sequence[Records]) -> Records:
    """One record per step: each metric's mean over the runs that logged it at that step."""
    by_step: dict[int, dict[str, list[float]]] = {}
    for records in runs:
        for record in records:
            slot = by_step.setdefault(record["step"], {})
            for key, value in record.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    slot.setdefault(key, []).append(float(value))
    return [{**{k: float(np.mean(v)) for k, v in slot.items()}, "step": step}
            for step, slot in sorted(by_step.items())]


def plot_success(curves: Mapping[str, Records], path: Path) -> Path:
    """Held-out and training success of every entry of ``curves`` (label → records)."""
    return plot_curves(curves, SUCCESS_PANELS, path, "success (mean over seeds)")


def plot_diagnostics(curves: Mapping[str, Records], path: Path) -> Path:
    """The stability diagnostics of every entry of ``curves``, one panel per metric."""
    return plot_curves(curves, DIAGNOSTIC_PANELS, path, "stability diagnostics (mean over seeds)",
                       cols=3)


def plot_kl_shares(panels: Mapping[str, Records | None], path: Path, cols: int = 2) -> Path:
    """The 8-group KL shares over the steps, one panel per label (``None``: not run)."""
    plt = pyplot()
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.2 * rows), squeeze=False)
    for ax, (label, records) in zip(axes.flat, panels.items(), strict=False):
        if records is None:
            ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes)
        else:
            plot_kl_share_bars(ax, records)
        ax.set_title(f"{label}: share of KL to πref by token group", fontsize=9)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    return save_figure(
        fig, path, "KL to πref by (sign A) × (sequence ratio) × (entropy), mean over seeds")


def plot_stress(cells: Sequence[Any], path: Path, cols: int = 3) -> Path:
    """One panel per method of the stress grid (:func:`~.stress.stress_cells`): learning rate
    × updates a step, each cell coloured by the paired change of held-out success from the
    start (mean over seeds) and labelled with it and with the runs that collapsed."""
    from arlarena_baselines.arena.stress import cell_grid, change_from_start

    plt = pyplot()
    methods = list(dict.fromkeys(m for cell in cells for m in cell.configs))
    rows = -(-len(methods) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.0 * rows), squeeze=False,
                             layout="constrained")
    image = None
    for ax, method in zip(axes.flat, methods, strict=False):
        lrs, counts, own = cell_grid(cells, method)
        grid = np.full((len(lrs), len(counts)), np.nan)
        for (lr, k), cell in own.items():
            config = cell.configs[method]
            delta = change_from_start(config)[0]
            i, j = lrs.index(lr), counts.index(k)
            grid[i, j] = delta
            collapsed = len(config.collapses)
            label = ("–" if np.isnan(delta) else f"{delta:+.2f}") + (
                f"\n✗ {collapsed}/{len(config.runs)}" if collapsed else "")
            ax.text(j, i, label, ha="center", va="center", fontsize=8)
        image = ax.imshow(grid, cmap="RdBu", vmin=-0.5, vmax=0.5, origin="lower",
                          aspect="auto")
        ax.set_xticks(range(len(counts)), [str(k) for k in counts])
        ax.set_yticks(range(len(lrs)), [f"{lr:g}" for lr in lrs])
        ax.set_xlabel("updates a step (staleness)")
        if ax in axes[:, 0]:
            ax.set_ylabel("learning rate")
        ax.set_title(method, fontsize=10)
    for ax in list(axes.flat)[len(methods):]:
        ax.axis("off")
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.8, label="held-out success, end − start")
    return save_figure(fig, path, "stress grid: held-out success change and collapsed runs (✗)",
                       tight=False)
