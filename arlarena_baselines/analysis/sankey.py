"""Sankey graphs of step-wise action transitions, to HTML (plotly) and PNG.

Holds :class:`Sankey` (nodes = (step, action type) plus the episode outcomes, links = how many
episodes went from one to the next), :func:`build_sankey` (links coloured by outcome, or by
action type for the failures-only view), :func:`to_plotly`, :func:`write_html` and
:func:`write_pngs`. PNGs come from plotly through kaleido (which needs a Chrome, e.g. Debian's
``chromium``) when it works, else from a matplotlib drawing of the same graph, so a PNG is made
on any machine.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from arlarena_baselines.analysis.actions import ACTION_TYPES, INVALID, OTHER, env_family
from arlarena_baselines.analysis.flows import ERROR, FAILURE, SUCCESS, EpisodeFlow

__all__ = [
    "MORE",
    "Sankey",
    "build_sankey",
    "to_plotly",
    "type_colors",
    "write_html",
    "write_pngs",
]

MORE = "more steps"
"""Node that collects episodes longer than the steps shown."""
OUTCOME_COLORS = {SUCCESS: "#2ca02c", FAILURE: "#d62728", ERROR: "#7f7f7f"}
_PALETTE = ("#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
            "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d")
_FIXED = {INVALID: "#000000", OTHER: "#c7c7c7", MORE: "#aaaaaa", **OUTCOME_COLORS}


def type_colors(env: str, types: Sequence[str]) -> dict[str, str]:
    """A colour per action type: the env's known types in order first, so colours are stable
    across runs of the same env."""
    known = [t for t in ACTION_TYPES[env_family(env)] if t not in _FIXED]
    extra = sorted({t for t in types if t not in known and t not in _FIXED})
    colors = {t: _PALETTE[i % len(_PALETTE)] for i, t in enumerate(known + extra)}
    return {**colors, **_FIXED}


def _rgba(color: str, alpha: float) -> str:
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


@dataclass(frozen=True)
class Node:
    """One node: an action type at a step (``column`` = step), or an outcome."""

    label: str
    column: int
    color: str
    rank: int
    """Place of the label among the env's types: nodes of a column are stacked in this order."""


@dataclass(frozen=True)
class Link:
    source: int
    target: int
    value: int
    color: str
    group: str
    """What the colour stands for (an outcome or an action type), for the legend."""


@dataclass
class Sankey:
    """A step-wise Sankey graph, independent of how it is drawn."""

    title: str
    nodes: list[Node] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    legend: dict[str, str] = field(default_factory=dict)
    """Colour of each group seen in the links."""

    @property
    def columns(self) -> int:
        return 1 + max((n.column for n in self.nodes), default=-1)


def build_sankey(
    flows: Sequence[EpisodeFlow], *, max_steps: int = 10, color_by: str = "outcome",
    title: str = "",
) -> Sankey:
    """The step-wise transitions of ``flows`` (episodes without actions are left out).

    Each episode is a path through ``(step, action type)`` nodes for its first ``max_steps``
    actions, then :data:`MORE` if it went on, then its outcome node. ``color_by="outcome"``
    colours each link by the outcome of the episodes on it (success green, failure red);
    ``color_by="action"`` colours it by the action type it leaves, for the failures-only view.
    """
    if color_by not in ("outcome", "action"):
        raise ValueError(f"color_by must be 'outcome' or 'action', got {color_by!r}")
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    env = flows[0].env if flows else ""
    colors = type_colors(env, [t for f in flows for t in f.types])
    sankey = Sankey(title)
    index: dict[tuple[int, str], int] = {}

    def node(column: int, label: str) -> int:
        if (column, label) not in index:
            index[(column, label)] = len(sankey.nodes)
            sankey.nodes.append(Node(label, column, colors[label], list(colors).index(label)))
        return index[(column, label)]

    paths = [(f, list(f.types[:max_steps]) + [MORE] * (len(f.types) > max_steps))
             for f in flows if f.types]
    last = max((len(p) for _, p in paths), default=0)
    counts: dict[tuple[int, int, str], int] = defaultdict(int)
    for flow, path in paths:
        ids = [node(step, label) for step, label in enumerate(path)]
        ids.append(node(last, flow.outcome))
        for step, (a, b) in enumerate(pairwise(ids)):
            group = flow.outcome if color_by == "outcome" else path[step]
            counts[(a, b, group)] += 1
    for (a, b, group), value in sorted(counts.items()):
        sankey.links.append(Link(a, b, value, colors[group], group))
        sankey.legend[group] = colors[group]
    return sankey


def to_plotly(sankey: Sankey) -> Any:
    """The graph as a plotly figure (hover shows the step and the episode count)."""
    import plotly.graph_objects as go

    labels = [n.label for n in sankey.nodes]
    steps = [f"step {n.column + 1}" if n.label not in OUTCOME_COLORS else "end"
             for n in sankey.nodes]
    figure = go.Figure(go.Sankey(
        arrangement="snap",
        node={"label": labels, "color": [n.color for n in sankey.nodes], "pad": 12,
              "thickness": 14, "customdata": steps,
              "hovertemplate": "%{label} at %{customdata}: %{value} episodes<extra></extra>"},
        link={"source": [k.source for k in sankey.links],
              "target": [k.target for k in sankey.links],
              "value": [k.value for k in sankey.links],
              "color": [_rgba(k.color, 0.45) for k in sankey.links],
              "customdata": [k.group for k in sankey.links],
              "hovertemplate": "%{customdata}: %{value} episodes<extra></extra>"},
    ))
    legend = "   ".join(f"<span style='color:{c}'>■</span> {g}"
                        for g, c in sankey.legend.items())
    figure.update_layout(title={"text": f"{sankey.title}<br><sup>{legend}</sup>"},
                         font={"size": 11}, margin={"l": 20, "r": 20, "t": 70, "b": 20})
    return figure


def write_html(sankey: Sankey, path: str | Path) -> Path:
    """An interactive page; plotly.js is copied once beside it, so it works offline."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    to_plotly(sankey).write_html(path, include_plotlyjs="directory", full_html=True)
    return path


def _size(sankey: Sankey) -> tuple[int, int]:
    return max(800, 130 * sankey.columns), 560


def write_pngs(items: Sequence[tuple[Sankey, str | Path]], backend: str = "auto") -> str:
    """Write each ``(sankey, path)`` as PNG; return the backend used.

    ``backend``: ``kaleido`` (plotly's renderer; needs kaleido and a Chrome), ``matplotlib``,
    or ``auto`` (kaleido, falling back to matplotlib with a warning when it fails).
    """
    if backend not in ("auto", "kaleido", "matplotlib"):
        raise ValueError(f"unknown PNG backend {backend!r}")
    for _, path in items:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    if backend != "matplotlib":
        try:
            import plotly.io as pio

            pio.write_images(
                [to_plotly(s) for s, _ in items], [Path(p) for _, p in items],
                width=[_size(s)[0] for s, _ in items], height=[_size(s)[1] for s, _ in items],
            )
            # Under load its Chrome can end a batch without writing every file, and say nothing.
            unwritten = [str(p) for _, p in items if not _written(Path(p))]
            if unwritten:
                raise RuntimeError(f"no PNG written for {', '.join(unwritten)}")
            return "kaleido"
        except Exception as error:  # kaleido reports a missing Chrome in many ways
            if backend == "kaleido":
                raise
            reason = " ".join(str(error).split())[:160]
            warnings.warn(f"kaleido could not export PNG ({type(error).__name__}: {reason}); "
                          "drawing it with matplotlib", stacklevel=2)
    for sankey, path in items:
        _draw_matplotlib(sankey, Path(path))
    return "matplotlib"


def _written(path: Path) -> bool:
    """Whether ``path`` holds a PNG (its signature at least)."""
    try:
        with path.open("rb") as handle:
            return handle.read(4) == b"\x89PNG"
    except OSError:
        return False


def _layout(sankey: Sankey, gap: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Top y and height of each node, columns stacked from the top; and the value scale."""
    inflow = np.zeros(len(sankey.nodes))
    outflow = np.zeros(len(sankey.nodes))
    for link in sankey.links:
        outflow[link.source] += link.value
        inflow[link.target] += link.value
    size = np.maximum(inflow, outflow)
    columns: dict[int, list[int]] = defaultdict(list)
    for i, n in sorted(enumerate(sankey.nodes), key=lambda item: item[1].rank):
        columns[n.column].append(i)
    tallest = max(size[c].sum() + gap * (len(c) - 1) for c in columns.values())
    scale = 1.0 / tallest
    top = np.zeros(len(sankey.nodes))
    for members in columns.values():
        y = 1.0
        for i in members:
            top[i] = y
            y -= size[i] * scale + gap * scale
    return top, size * scale, scale


def _draw_matplotlib(sankey: Sankey, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    width, height = _size(sankey)
    figure = Figure(figsize=(width / 100, height / 100), dpi=100)
    FigureCanvasAgg(figure)
    ax = figure.add_axes((0.02, 0.04, 0.96, 0.78))
    total = sum(k.value for k in sankey.links) or 1
    top, size, scale = _layout(sankey, gap=0.04 * total / max(sankey.columns, 1))
    half = 0.06
    out_y, in_y = top.copy(), top.copy()
    order = sorted(sankey.links, key=lambda k: (top[k.source], top[k.target]), reverse=True)
    t = np.linspace(0.0, 1.0, 50)
    ease = 3 * t**2 - 2 * t**3
    for link in order:
        band = link.value * scale
        x0 = sankey.nodes[link.source].column + half
        x1 = sankey.nodes[link.target].column - half
        y0, y1 = out_y[link.source], in_y[link.target]
        out_y[link.source] -= band
        in_y[link.target] -= band
        upper = y0 + (y1 - y0) * ease
        ax.fill_between(x0 + (x1 - x0) * t, upper - band, upper, color=link.color, alpha=0.45,
                        linewidth=0)
    last = sankey.columns - 1
    for i, n in enumerate(sankey.nodes):
        ax.add_patch(Rectangle((n.column - half, top[i] - size[i]), 2 * half, size[i],
                               facecolor=n.color, edgecolor="none"))
        if size[i] > 0.015:
            left = n.column == last
            ax.text(n.column + (-half - 0.03 if left else half + 0.03), top[i] - size[i] / 2,
                    f"{n.label} ({round(size[i] / scale)})", va="center", fontsize=7,
                    ha="right" if left else "left")
    labels = {n.column: n.label for n in sankey.nodes}
    for column in range(sankey.columns):
        name = "end" if column == last else f"step {column + 1}"
        name = "later" if labels[column] == MORE else name
        ax.text(column, 1.03, name, ha="center", va="bottom", fontsize=8, color="#555555")
    ax.set_xlim(-0.5, last + 0.5)
    ax.set_ylim(min(float((top - size).min()), 0.0) - 0.02, 1.08)
    ax.axis("off")
    figure.suptitle(sankey.title, fontsize=11, y=0.98)
    figure.legend(handles=[Patch(color=c, label=g) for g, c in sankey.legend.items()],
                  loc="upper center", bbox_to_anchor=(0.5, 0.93), ncol=min(8, len(sankey.legend)),
                  fontsize=8, frameon=False)
    figure.savefig(path, format="png")
