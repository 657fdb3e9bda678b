"""Summaries of episode records: the results table, per-task-type rows and pass@k.

Holds :func:`pass_at_k` (the unbiased estimator of Chen et al., 2021), :func:`summarize` and
:func:`format_table` (markdown).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from math import comb
from typing import Any

__all__ = ["Summary", "format_table", "pass_at_k", "summarize"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of ``k`` of ``n`` samples (``c`` correct) is correct."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


@dataclass
class Summary:
    """One row of the results table."""

    agent: str
    env: str
    group: str
    episodes: int
    success: float
    score: float
    valid_format: float
    turns: float
    pass_at: dict[int, float] = field(default_factory=dict)


def _row(agent: str, env: str, group: str, episodes: Sequence[dict[str, Any]]) -> Summary:
    n = len(episodes)
    turns = sum(e["turns"] for e in episodes)
    valid = sum(e["valid_turns"] for e in episodes)
    row = Summary(
        agent=agent,
        env=env,
        group=group,
        episodes=n,
        success=sum(bool(e["won"]) for e in episodes) / n,
        score=sum(float(e["score"]) for e in episodes) / n,
        valid_format=valid / turns if turns else 0.0,
        turns=turns / n,
    )
    by_task: dict[Any, list[bool]] = defaultdict(list)
    for e in episodes:
        by_task[e["seed"]].append(bool(e["won"]))
    samples = min(len(v) for v in by_task.values())
    if samples > 1:
        ks = sorted({1, samples} | {k for k in (2, 4, 8, 16) if k < samples})
        for k in ks:
            hits = [pass_at_k(len(v), sum(v), k) for v in by_task.values()]
            row.pass_at[k] = sum(hits) / len(hits)
    return row


def summarize(records: Iterable[dict[str, Any]]) -> list[Summary]:
    """Rows per (agent, env): overall, then per ``task_type`` and per ``dataset`` if present."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("type") == "episode":
            groups[(record["agent"], record["env"])].append(record)
    rows = []
    for (agent, env), episodes in groups.items():
        rows.append(_row(agent, env, "all", episodes))
        for key in ("task_type", "dataset"):
            parts: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for e in episodes:
                if e.get(key) is not None:
                    parts[str(e[key])].append(e)
            if len(parts) > 1:
                for name, part in sorted(parts.items()):
                    rows.append(_row(agent, env, f"{key}={name}", part))
    return rows


def format_table(rows: Sequence[Summary]) -> str:
    """The rows as a markdown table (pass@k columns appear when any row has them)."""
    ks = sorted({k for r in rows for k in r.pass_at})
    head = ["agent", "env", "group", "episodes", "success", "score", "valid format", "turns"]
    head += [f"pass@{k}" for k in ks]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r.agent, r.env, r.group, str(r.episodes), f"{r.success:.1%}", f"{r.score:.3f}",
                 f"{r.valid_format:.1%}", f"{r.turns:.1f}"]
        cells += [f"{r.pass_at[k]:.1%}" if k in r.pass_at else "" for k in ks]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
