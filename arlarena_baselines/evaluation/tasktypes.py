"""Success per ALFWorld task type, in the layout of the study's Table 8.

Holds :data:`TASK_TYPE_COLUMNS` (ALFWorld's six task types with the table's short names, in
its order), :func:`task_type_rows` (one row per results file: success and its standard error
per task type and over all episodes) and :func:`task_type_markdown`. The rows read the episode
records that ``arlarena eval`` and ``arlarena train compare`` write (each names its
``task_type``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["TASK_TYPE_COLUMNS", "task_type_markdown", "task_type_rows"]

TASK_TYPE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("pick_and_place_simple", "Pick"),
    ("look_at_obj_in_light", "Look"),
    ("pick_clean_then_place_in_recep", "Clean"),
    ("pick_heat_then_place_in_recep", "Heat"),
    ("pick_cool_then_place_in_recep", "Cool"),
    ("pick_two_obj_and_place", "Pick Two"),
)
"""(task type, column name) of the study's Table 8, in its order; the table ends with All."""

ALL = "All"


def _mean_se(values: list[float]) -> tuple[float, float, int]:
    n = len(values)
    if n == 0:
        return math.nan, math.nan, 0
    mean = sum(values) / n
    if n == 1:
        return mean, math.nan, 1
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n), n


def task_type_rows(
    results: Mapping[str, Iterable[Mapping[str, Any]]],
) -> list[dict[str, Any]]:
    """One row per labelled set of records: ``{"model": label, column: {"success", "se",
    "n"}}`` for each task type and ``All``. Records other than finished episodes (turns,
    settings, episodes with an ``error``) are skipped; an episode of an unknown task type
    counts in ``All`` only.

    >>> rows = task_type_rows({"bc": [
    ...     {"type": "episode", "task_type": "look_at_obj_in_light", "won": True},
    ...     {"type": "episode", "task_type": "look_at_obj_in_light", "won": False},
    ...     {"type": "episode", "task_type": "pick_and_place_simple", "won": True}]})
    >>> rows[0]["Look"]["success"], rows[0]["Pick"]["n"], round(rows[0]["All"]["success"], 3)
    (0.5, 1, 0.667)
    """
    rows = []
    for label, records in results.items():
        by_type: dict[str, list[float]] = {}
        every: list[float] = []
        for r in records:
            if r.get("type") != "episode" or r.get("error"):
                continue
            won = float(bool(r.get("won")))
            every.append(won)
            by_type.setdefault(str(r.get("task_type")), []).append(won)
        row: dict[str, Any] = {"model": label}
        for task_type, column in TASK_TYPE_COLUMNS:
            mean, se, n = _mean_se(by_type.get(task_type, []))
            row[column] = {"success": mean, "se": se, "n": n}
        mean, se, n = _mean_se(every)
        row[ALL] = {"success": mean, "se": se, "n": n}
        rows.append(row)
    return rows


def task_type_markdown(rows: list[dict[str, Any]], percent: bool = True) -> str:
    """The rows as a markdown table: success (± SE) per task type and over all, in percent
    by default as the study prints it; each header names the episodes it counts."""
    columns = [c for _, c in TASK_TYPE_COLUMNS] + [ALL]

    def cell(entry: dict[str, Any]) -> str:
        if entry["n"] == 0:
            return "–"
        scale = 100.0 if percent else 1.0
        text = f"{scale * entry['success']:.1f}" if percent else f"{entry['success']:.3f}"
        if not math.isnan(entry["se"]):
            text += f" ± {scale * entry['se']:.1f}" if percent else f" ± {entry['se']:.3f}"
        return text

    counts = {c: max((row[c]["n"] for row in rows), default=0) for c in columns}
    head = "| model | " + " | ".join(f"{c} (n={counts[c]})" for c in columns) + " |"
    lines = [head, "|---" * (len(columns) + 1) + "|"]
    lines += ["| " + " | ".join([str(row["model"])] + [cell(row[c]) for c in columns]) + " |"
              for row in rows]
    return "\n".join(lines) + "\n"
