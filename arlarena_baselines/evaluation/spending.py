"""What API agents spent, kept in the results: every attempt, failure and billed token.

As a run spends, the runner appends ``{"type": "spend", ...}`` records of each change
(:meth:`~wrappers.agents.base.Agent.record_spending`): an attempt the moment before it is sent,
then its failure by kind or its answer (tokens, estimated billed tokens, cost), and each reply
from the cache; so a run stopped any way, killed included, has every attempt it sent on record.
Each record names its agent, model, endpoint and settings, and carries its run's id and its
number in the run (``run``, ``seq``), so a copied file adds nothing to a report. Episode records
hold what each episode used; these hold what was paid, failed attempts included. Answers that
reported no token counts are counted as ``no_usage``.

Holds :func:`spend_records`, :func:`total_spend` (summed per agent, model and endpoint),
:func:`describe_spend` (one line); :func:`~.report.format_spend` makes the table.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from wrappers.agents.base import Agent, add_usage

__all__ = ["describe_spend", "spend_cost", "spend_failures", "spend_records", "total_spend"]

_KEYS = ("agent", "model", "endpoint")


def spend_records(agent: Agent, settings: str) -> list[dict[str, Any]]:
    """The spend records of what ``agent`` spent since the last call (``settings``: the
    digest of the run's settings record); none for an agent that sent nothing."""
    return [{"type": "spend", "agent": agent.name, "settings": settings, **spent}
            for spent in agent.spending() if spent.get("attempts") or spent.get("cache_hits")]


def _counts(value: Any) -> dict[str, float]:
    """The numeric fields of ``value`` but its number in the run (a hand-edited record may
    hold anything)."""
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "seq"}


def total_spend(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The spend records of ``records`` summed per agent, model and endpoint. ``cost`` is
    kept when every record summed has one and every answer had token counts, else it is
    ``"partial"``."""
    totals: dict[tuple[str, ...], dict[str, Any]] = {}
    for record in records:
        if record.get("type") != "spend":
            continue
        key = tuple(str(record.get(k)) for k in _KEYS)
        counts = _counts(record)
        total = totals.setdefault(key, {**dict(zip(_KEYS, key, strict=True)), "failures": {},
                                        "runs": 0, "priced": 0})
        total["runs"] += 1
        total["priced"] += "cost" in counts
        add_usage(total["failures"], _counts(record.get("failures")))
        add_usage(total, counts)
    for total in totals.values():
        runs, priced = total.pop("runs"), total.pop("priced")
        if 0 < priced < runs or (priced and total.get("no_usage")):
            total["cost"] = "partial"
    return list(totals.values())


def spend_failures(total: dict[str, Any]) -> str:
    """The failed attempts of ``total`` by kind (``"none"``)."""
    failures = total.get("failures") or {}
    return ", ".join(f"{kind} {n:.0f}" for kind, n in sorted(failures.items()) if n) or "none"


def spend_cost(total: dict[str, Any]) -> str:
    """The cost of ``total`` as text: USD, ``"partial"``, or ``""`` (no price)."""
    cost = total.get("cost")
    return cost if isinstance(cost, str) else "" if cost is None else f"{cost:.4f}"


def describe_spend(total: dict[str, Any]) -> str:
    """One line of what ``total`` (a spend record or a sum of them) says."""
    failed = sum((total.get("failures") or {}).values())
    text = (f"{total['model']} at {total['endpoint']}: {total.get('attempts', 0):.0f} "
            f"attempts sent, {failed:.0f} failed ({spend_failures(total)}), "
            f"{total.get('answered', 0):.0f} answered by the server, "
            f"{total.get('cache_hits', 0):.0f} from the cache, "
            f"~{total.get('est_billed_tokens', 0):.0f} tokens billed")
    if total.get("no_usage"):
        text += (f", {total['no_usage']:.0f} answered without token counts (their tokens are "
                 "estimated and their cost unknown)")
    if total.get("cost") is not None:
        text += f", cost ${spend_cost(total)}"
    return text
