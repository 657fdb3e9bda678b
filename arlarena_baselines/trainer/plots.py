"""Training curves and the stability-diagnostics panel of a run, drawn to PNG.

Holds :func:`metric_series` (one metric's steps and values in a run), :func:`plot_kl_share_bars`
(the KL-share panel, also drawn by the arena's report), :func:`plot_curves` (one line
per run or method on each panel, the arena's figures too), :func:`plot_runs` (several runs'
success and valid format on one figure, the evaluation's points with their binomial SE) and
:func:`plot_run`, which reads
``RUN/metrics.jsonl`` and writes, per phase found: ``plots/<phase>_curves.png`` (success and
valid-format ratio on the training rollouts and on the held-out evaluation, return, response
length, entropy; the SFT loss) and, for RL, ``plots/rl_diagnostics.png`` (KL to π_old and to π_ref,
gradient norm, the out-of-band ratio fractions, clip fraction, entropy, filtered groups and
masked sequences, and the KL-to-ref shares of the 8 token groups). Needs matplotlib (the
``plot`` extra).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.trainer.tracking import read_metrics

__all__ = ["metric_series", "plot_curves", "plot_kl_share_bars", "plot_run", "plot_runs", "pyplot",
           "save_figure"]

# (title, [(metric key, label)]) per panel.
Panel = tuple[str, Sequence[tuple[str, str]]]

_RL_CURVES: list[Panel] = [
    ("success rate", [(mn.SUCCESS_RATE, "train rollouts"),
                      (mn.eval_key(mn.SUCCESS_RATE), "held-out")]),
    ("valid-format ratio", [(mn.VALID_FORMAT_RATIO, "train rollouts"),
                            (mn.eval_key(mn.VALID_FORMAT_RATIO), "held-out")]),
    ("episode return", [(mn.RETURN, "train rollouts"), (mn.eval_key(mn.RETURN), "held-out")]),
    ("response length (tokens)", [(mn.RESPONSE_LENGTH, "train rollouts"),
                                  (mn.eval_key(mn.RESPONSE_LENGTH), "held-out")]),
    ("entropy", [(mn.ROLLOUT_ENTROPY, "π_old, train rollouts"),
                 (mn.ENTROPY, "update (−log π of the tokens where not trained)")]),
]
_SFT_CURVES: list[Panel] = [
    ("SFT loss (response tokens)", [(mn.SFT_LOSS, "cross-entropy")]),
    ("held-out success rate", [(mn.eval_key(mn.SUCCESS_RATE), "success")]),
    ("held-out valid-format ratio", [(mn.eval_key(mn.VALID_FORMAT_RATIO), "valid format")]),
    ("learning rate", [(mn.SFT_LR, "lr")]),
]
_RL_DIAGNOSTICS: list[Panel] = [
    ("KL divergences", [(mn.KL_OLD, "KL(πθ‖πold)"), (mn.KL_REF, "k3 KL to πref")]),
    ("gradient norm", [(mn.GRAD_NORM, "mean"), (mn.GRAD_NORM_MAX, "max")]),
    ("ratio outside [1-ε_low, 1+ε_high]", [(mn.STAB_OOB_LOW_FRAC, "low (A<0)"),
                                           (mn.STAB_OOB_HIGH_FRAC, "high (A>0)"),
                                           (mn.OOB_FRAC, "all tokens")]),
    ("clip fraction", [(mn.STAB_CLIP_FRAC, "stability"), (mn.CLIP_FRAC, "policy loss")]),
    ("entropy", [(mn.ENTROPY, "token entropy")]),
    ("filtering and masking", [(mn.GROUPS_FILTERED, "groups filtered"),
                               (mn.SEQS_MASKED, "sequences masked")]),
    ("valid-format ratio", [(mn.VALID_FORMAT_RATIO, "train rollouts")]),
]


# (title, metric key) per panel of the comparison figure.
_COMPARE: list[tuple[str, str]] = [
    ("evaluation success rate (± SE)", mn.eval_key(mn.SUCCESS_RATE)),
    ("evaluation valid-format ratio", mn.eval_key(mn.VALID_FORMAT_RATIO)),
    ("success rate, train rollouts", mn.SUCCESS_RATE),
    ("valid-format ratio, train rollouts", mn.VALID_FORMAT_RATIO),
]


def metric_series(records: list[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    """The steps where ``key`` was logged (not null) and its values there."""
    points = [(r["step"], r[key]) for r in records if r.get(key) is not None]
    return [p[0] for p in points], [p[1] for p in points]


def _draw(records: list[dict[str, Any]], panels: list[Panel], title: str, path: Path,
          extra: bool = False) -> Path:
    plt = pyplot()
    count = len(panels) + (1 if extra else 0)
    cols = 2 if count <= 4 else 3
    rows = -(-count // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    flat = list(axes.flat)
    for ax, (name, series) in zip(flat, panels, strict=False):
        for key, label in series:
            steps, values = metric_series(records, key)
            if steps:
                _line(ax, steps, values, label)
        _dress(ax, name)
    if extra:
        plot_kl_share_bars(flat[len(panels)], records)
    for ax in flat[count:]:
        ax.axis("off")
    return save_figure(fig, path, title)


def _line(ax: Any, steps: list[int], values: list[float], label: str) -> None:
    ax.plot(steps, values, marker="o" if len(steps) < 30 else None, ms=3, label=label)


def _dress(ax: Any, title: str, legend: bool = True) -> None:
    """Title, step axis, grid, and a legend of the panel's own (unless the figure has one), or
    "not logged" where nothing was drawn."""
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("step")
    ax.grid(alpha=0.3)
    if not ax.lines:
        ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes)
    elif legend:
        ax.legend(fontsize=7)


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: str | Path, title: str | None = None, tight: bool = True) -> Path:
    """Title ``fig``, lay it out (``tight``: a figure with a shared colour bar lays itself out,
    constrained), write it to ``path`` as PNG and close it."""
    if title is not None:
        fig.suptitle(title)
    if tight:
        fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    pyplot().close(fig)
    return path


def plot_kl_share_bars(ax: Any, records: list[dict[str, Any]]) -> None:
    """Stacked shares of the KL to π_ref over the 8 (sign A) × (seq ratio) × (entropy) groups."""
    rows = [r for r in records if all(r.get(k) is not None for k in mn.KL_REF_SHARE_KEYS)]
    ax.set_title("share of KL to πref by token group", fontsize=10)
    ax.set_xlabel("step")
    if not rows:
        ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes)
        return
    steps = [r["step"] for r in rows]
    values = [[r[k] for r in rows] for k in mn.KL_REF_SHARE_KEYS]
    labels = [k.split("kl_ref_share/")[1] for k in mn.KL_REF_SHARE_KEYS]
    ax.stackplot(steps, values, labels=labels)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.02, 0.5))


def plot_run(run_dir: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    """Draw every figure the run's metrics allow; return the PNG paths."""
    run_dir = Path(run_dir)
    records = read_metrics(run_dir)
    if not records:
        raise ValueError(f"{run_dir} has no metrics to plot")
    out = Path(out_dir) if out_dir is not None else run_dir / "plots"
    name = run_dir.name
    written = []
    sft = [r for r in records if r.get("phase") == "sft"]
    rl = [r for r in records if r.get("phase") == "rl"]
    if sft:
        title = f"{name}: behaviour cloning"
        written.append(_draw(sft, _SFT_CURVES, title, out / "sft_curves.png"))
    if rl:
        written.append(_draw(rl, _RL_CURVES, f"{name}: RL training curves", out / "rl_curves.png"))
        written.append(_draw(rl, _RL_DIAGNOSTICS, f"{name}: stability diagnostics",
                             out / "rl_diagnostics.png", extra=True))
    return written


def plot_curves(curves: Mapping[str, list[dict[str, Any]]], panels: Sequence[tuple[str, str]],
                path: str | Path, title: str | None = None, cols: int = 2,
                error_bars: Collection[str] = ()) -> Path:
    """One panel per (title, metric key) of ``panels``, one line per entry of ``curves`` (label →
    a run's records), the legend beside the panels. A key of ``error_bars`` is an evaluation's
    rate: its points carry their binomial SE (√(p(1-p)/n), n the evaluation's episodes), so two
    runs can be told apart from evaluation noise."""
    plt = pyplot()
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.2 * rows), squeeze=False)
    colours = plt.get_cmap("tab20")
    episodes_key = mn.eval_key(mn.EPISODES)
    for ax, (name, key) in zip(axes.flat, panels, strict=False):
        for i, (label, records) in enumerate(curves.items()):
            steps, values = metric_series(records, key)
            if not steps:
                continue
            # tab20's dark shades first, then the light ones; dashes from the 11th line
            style = dict(color=colours((2 * i) % 20 + (2 * i // 20) % 2),
                         ls="-" if i < 10 else "--", lw=1.3, label=label,
                         marker="o" if len(steps) < 12 else None, ms=3)
            if key in error_bars:
                n = [r[episodes_key] for r in records if r.get(key) is not None]
                se = [(v * (1 - v) / max(k, 1)) ** 0.5 for v, k in zip(values, n, strict=True)]
                ax.errorbar(steps, values, yerr=se, capsize=2, **style)
            else:
                ax.plot(steps, values, **style)
        _dress(ax, name, legend=False)  # one legend beside the panels
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if not handles:
        handles, labels = axes.flat[-1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    return save_figure(fig, path, title)


def plot_runs(run_dirs: Sequence[str | Path], path: str | Path,
              labels: Sequence[str] | None = None) -> Path:
    """Several RL runs on one figure (:data:`_COMPARE`): a line per run, labelled by its
    folder's name or ``labels``; evaluation success carries its binomial SE."""
    dirs = [Path(d) for d in run_dirs]
    labels = list(labels) if labels is not None else [d.name for d in dirs]
    if len(labels) != len(dirs):
        raise ValueError(f"{len(labels)} labels for {len(dirs)} runs")
    if len(set(labels)) != len(labels):
        raise ValueError(f"labels must differ: {labels}")
    curves = {}
    for d, label in zip(dirs, labels, strict=True):
        records = [r for r in read_metrics(d) if r.get("phase") == "rl"]
        if not records:
            raise ValueError(f"{d} has no RL metrics to plot")
        curves[label] = records
    return plot_curves(curves, _COMPARE, path, error_bars={mn.eval_key(mn.SUCCESS_RATE)})
