"""Summaries of episode records: the results table, per-task-type rows and pass@k.

Holds :func:`pass_at_k` (the unbiased estimator of Chen et al., 2021), :func:`summarize`,
:func:`format_table` (markdown), :func:`format_comparison` (the study's comparison: per env,
one row per agent or method, one column per task type), :func:`format_spend` (what API agents
spent) and :func:`write_csv`.

Episodes that ended with an ``error`` count as failures in ``success`` (the ``errors`` column
says how many), so an unreliable endpoint never makes an agent look better than it is;
``success (finished)`` is the rate over the episodes that ended without one. A row whose
episodes are priced only in part, or whose replies came in part without token counts, shows its
cost as ``partial``, never as a smaller sum. Replies that did not stop by themselves (the
server's ``finish_reason``: ``length``, cut at the token limit; ``content_filter``) are counted
in a ``cut replies`` column where any row has one.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from math import comb
from typing import IO, Any

from arlarena_baselines.evaluation.spending import spend_cost, spend_failures

__all__ = [
    "Summary",
    "format_comparison",
    "format_spend",
    "format_table",
    "pass_at_k",
    "summarize",
    "write_csv",
]


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
    errors: int = 0
    finished_success: float | None = None
    """Success over the episodes that ended without an error (``None``: none did)."""
    tokens: float | None = None
    """Mean prompt + completion tokens per episode (``None``: the agent reports no usage)."""
    cost: float | None = None
    """Total cost in USD (``None``: no price known)."""
    cost_partial: bool = False
    """Some episodes that used tokens have no cost (results with and without prices, or
    replies without token counts)."""
    no_usage: int = 0
    """Replies that came without token counts (their tokens are not in ``tokens``)."""
    cut: dict[str, int] = field(default_factory=dict)
    """Replies by ``finish_reason`` other than ``stop`` (e.g. ``length``)."""
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
        errors=sum(bool(e.get("error")) for e in episodes),
    )
    finished = [bool(e["won"]) for e in episodes if not e.get("error")]
    if finished:
        row.finished_success = sum(finished) / len(finished)
    usages = [e["usage"] for e in episodes if e.get("usage")]
    if usages:
        row.tokens = sum(u.get("prompt_tokens", 0) + u.get("completion_tokens", 0)
                         for u in usages) / n
    row.no_usage = int(sum(u.get("no_usage", 0) for u in usages))
    priced = [u["cost"] for u in usages if "cost" in u]
    if priced:
        row.cost = sum(priced)
        row.cost_partial = len(priced) < len(usages) or row.no_usage > 0
    for e in episodes:
        reasons = e.get("finish_reasons")
        for reason, n in (reasons.items() if isinstance(reasons, dict) else ()):
            if reason != "stop" and isinstance(n, int):
                row.cut[str(reason)] = row.cut.get(str(reason), 0) + n
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


def _is_episode(record: dict[str, Any]) -> bool:
    """An episode record with the fields a summary reads (others, e.g. hand-edited, are
    skipped)."""
    number = (int, float)
    return (
        record.get("type") == "episode"
        and isinstance(record.get("agent"), str) and isinstance(record.get("env"), str)
        and isinstance(record.get("turns"), int) and isinstance(record.get("valid_turns"), int)
        and isinstance(record.get("score"), number) and isinstance(record.get("seed"), int)
        and isinstance(record.get("usage", {}), dict)
    )


def summarize(records: Iterable[dict[str, Any]]) -> list[Summary]:
    """Rows per (agent, env): overall, then per ``task_type`` and per ``dataset`` if present."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        if _is_episode(record):
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


def _markdown(head: Sequence[str], body: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return "\n".join(lines)


def _cost(row: Summary, digits: str) -> str:
    if row.cost_partial:
        return "partial"
    return "" if row.cost is None else format(row.cost, digits)


def _rate(value: float | None, digits: str) -> str:
    return "" if value is None else format(value, digits)


def format_table(rows: Sequence[Summary]) -> str:
    """The rows as a markdown table.

    ``success`` counts episodes that ended with an error as failures; ``errors`` counts them
    and ``success (finished)`` leaves them out. Usage columns (tokens per episode, cost)
    appear when any row has them, ``cut replies`` (by finish reason) when any row has one,
    then pass@k columns when any row has them.
    """
    ks = sorted({k for r in rows for k in r.pass_at})
    tokens = any(r.tokens is not None for r in rows)
    cost = any(r.cost is not None for r in rows)
    cut = any(r.cut for r in rows)
    head = ["agent", "env", "group", "episodes", "success", "score", "valid format", "turns",
            "errors", "success (finished)"]
    head += (["tokens/ep"] * tokens + ["cost $"] * cost + ["cut replies"] * cut
             + [f"pass@{k}" for k in ks])
    body = []
    for r in rows:
        cells = [r.agent, r.env, r.group, str(r.episodes), f"{r.success:.1%}", f"{r.score:.3f}",
                 f"{r.valid_format:.1%}", f"{r.turns:.1f}", str(r.errors),
                 _rate(r.finished_success, ".1%")]
        cells += [f"{r.tokens:.0f}" if r.tokens is not None else ""] * tokens
        cells += [_cost(r, ".4f")] * cost
        cells += [", ".join(f"{reason} {n}" for reason, n in sorted(r.cut.items()))] * cut
        cells += [f"{r.pass_at[k]:.1%}" if k in r.pass_at else "" for k in ks]
        body.append(cells)
    return _markdown(head, body)


def format_comparison(rows: Sequence[Summary]) -> str:
    """The study's comparison: per env a table, one row per agent, one column per task type.

    Each cell is ``success / mean score`` of that agent on that slice (``all`` = every
    episode); ``errors`` counts episodes that ended with an error.
    """
    by_env: dict[str, list[Summary]] = defaultdict(list)
    for row in rows:
        by_env[row.env].append(row)
    sections = []
    for env, env_rows in by_env.items():
        agents = list(dict.fromkeys(r.agent for r in env_rows))
        types = sorted({r.group for r in env_rows if r.group.startswith("task_type=")})
        cell = {(r.agent, r.group): r for r in env_rows}
        head = ["agent", "episodes", "errors", "all"] + [t.split("=", 1)[1] for t in types]
        body = []
        for agent in agents:
            overall = cell[(agent, "all")]
            cells = [agent, str(overall.episodes), str(overall.errors)]
            for group in ["all", *types]:
                r = cell.get((agent, group))
                cells.append(f"{r.success:.1%} / {r.score:.3f}" if r else "")
            body.append(cells)
        sections.append(f"### {env}\n\n" + _markdown(head, body))
    return "\n\n".join(sections) + "\n\ncells: success / mean score"


def write_csv(rows: Sequence[Summary], handle: IO[str]) -> None:
    """The rows in long form (one line per agent × env × group), for spreadsheets and pandas."""
    ks = sorted({k for r in rows for k in r.pass_at})
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(["agent", "env", "group", "episodes", "errors", "success",
                     "success_finished", "score", "valid_format", "turns",
                     "tokens_per_episode", "cost_usd"] + [f"pass@{k}" for k in ks])
    for r in rows:
        writer.writerow(
            [r.agent, r.env, r.group, r.episodes, r.errors, f"{r.success:.6g}",
             _rate(r.finished_success, ".6g"), f"{r.score:.6g}", f"{r.valid_format:.6g}",
             f"{r.turns:.6g}", _rate(r.tokens, ".6g"), _cost(r, ".6g")]
            + [f"{r.pass_at[k]:.6g}" if k in r.pass_at else "" for k in ks]
        )


def format_spend(totals: Iterable[dict[str, Any]]) -> str:
    """What API agents spent (:func:`~.spending.total_spend`) as a markdown table: per agent,
    model and endpoint, the attempts sent and the failed ones by kind, replies answered and
    from the cache, tokens, estimated billed tokens and cost."""
    head = ["agent", "model", "endpoint", "attempts", "failed", "answered", "from cache",
            "tokens", "est. billed tokens", "cost $"]
    body = [
        [str(t["agent"]), str(t["model"]), str(t["endpoint"]), f"{t.get('attempts', 0):.0f}",
         f"{sum((t.get('failures') or {}).values()):.0f} ({spend_failures(t)})",
         f"{t.get('answered', 0):.0f}", f"{t.get('cache_hits', 0):.0f}",
         f"{t.get('prompt_tokens', 0) + t.get('completion_tokens', 0):.0f}",
         f"{t.get('est_billed_tokens', 0):.0f}", spend_cost(t)]
        for t in totals
    ]
    return _markdown(head, body)
