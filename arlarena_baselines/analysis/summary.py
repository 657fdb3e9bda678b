"""What the action-flow analysis reports: action mix, transitions and loops, per outcome.

Holds :func:`analyze` (a JSON-ready summary of a set of episodes), :func:`format_analysis`
(markdown) and :func:`write_loops_csv` (the loop counts of every episode).
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, fields
from typing import IO, Any

from arlarena_baselines.analysis.flows import (
    EpisodeFlow,
    Loops,
    action_counts,
    find_loops,
    transition_counts,
)

__all__ = ["analyze", "format_analysis", "write_loops_csv"]

_LOOP_KINDS = [f.name for f in fields(Loops) if f.name != "longest_repeat"]


def analyze(flows: Sequence[EpisodeFlow]) -> dict[str, Any]:
    """Counts of outcomes, action types (per outcome), transitions (per outcome) and loops.

    ``loops`` gives, per loop kind and outcome, the share of episodes showing it and the mean
    count per episode.
    """
    outcomes = Counter(f.outcome for f in flows)
    loops = [(f.outcome, find_loops(f)) for f in flows]
    loop_summary: dict[str, dict[str, dict[str, float]]] = {}
    for kind in _LOOP_KINDS:
        loop_summary[kind] = {}
        for outcome in outcomes:
            counts = [getattr(lp, kind) for o, lp in loops if o == outcome]
            loop_summary[kind][outcome] = {
                "episodes_with": sum(c > 0 for c in counts) / len(counts),
                "mean": sum(counts) / len(counts),
            }
    return {
        "episodes": len(flows),
        "outcomes": dict(outcomes),
        "actions": {o: dict(action_counts(flows, outcome=o)) for o in outcomes},
        "transitions": {
            o: [[a, b, n] for (a, b), n in transition_counts(flows, outcome=o).most_common()]
            for o in outcomes
        },
        "loops": loop_summary,
    }


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def format_analysis(flows: Sequence[EpisodeFlow], title: str, top: int = 10) -> str:
    """Markdown: outcomes, the action mix per outcome, top transitions, loop shares."""
    summary = analyze(flows)
    outcomes = sorted(summary["outcomes"])
    parts = [f"## {title}", "",
             "episodes: " + ", ".join(f"{o} {summary['outcomes'][o]}" for o in outcomes)]
    types = sorted({t for o in outcomes for t in summary["actions"][o]})
    rows = []
    for t in types:
        row = [t]
        for o in outcomes:
            counts = summary["actions"][o]
            total = sum(counts.values()) or 1
            row.append(f"{counts.get(t, 0)} ({counts.get(t, 0) / total:.0%})")
        rows.append(row)
    parts += ["", "action types:", "", _table(["type", *outcomes], rows)]
    for o in outcomes:
        shown = summary["transitions"][o][:top]
        parts += ["", f"top transitions ({o}):", "",
                  _table(["from", "to", "count"], [[a, b, str(n)] for a, b, n in shown])]
    rows = [[kind, *(f"{summary['loops'][kind][o]['episodes_with']:.0%} "
                     f"(mean {summary['loops'][kind][o]['mean']:.2f})" for o in outcomes)]
            for kind in _LOOP_KINDS]
    parts += ["", "loops (share of episodes, mean count):", "",
              _table(["loop", *outcomes], rows)]
    return "\n".join(parts)


def write_loops_csv(flows: Sequence[EpisodeFlow], handle: IO[str]) -> None:
    """One line per episode: id, outcome, steps, then every :class:`Loops` count."""
    names = [f.name for f in fields(Loops)]
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(["agent", "env", "episode_id", "outcome", "steps", *names])
    for flow in flows:
        counts = asdict(find_loops(flow))
        writer.writerow([flow.agent, flow.env, flow.episode_id, flow.outcome, len(flow.types),
                         *(counts[n] for n in names)])
