"""The per-task-type success table (the layout of the study's Table 8)."""

from __future__ import annotations

import math

import pytest

from arlarena_baselines.evaluation.tasktypes import (
    TASK_TYPE_COLUMNS,
    task_type_markdown,
    task_type_rows,
)
from arlarena_envs.alfworld.generator import TASK_TYPES


def _episode(task_type: str, won: bool, **extra) -> dict:
    return {"type": "episode", "task_type": task_type, "won": won, **extra}


def test_columns_are_alfworlds_six_types_in_order():
    assert tuple(t for t, _ in TASK_TYPE_COLUMNS) == TASK_TYPES


def test_rows_count_each_type_and_all_and_skip_what_is_not_a_finished_episode():
    heat, cool = "pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep"
    records = [_episode(heat, True), _episode(heat, False), _episode(heat, True),
               _episode(cool, False), {"type": "turn", "task_type": heat, "won": True},
               _episode(cool, True, error="timeout"), _episode("unknown_type", True)]
    (row,) = task_type_rows({"rl": records})
    assert row["model"] == "rl"
    assert row["Heat"]["n"] == 3 and row["Heat"]["success"] == pytest.approx(2 / 3)
    assert row["Heat"]["se"] == pytest.approx(math.sqrt((1 / 3) / 3))  # sd 0.577 / sqrt(3)
    assert (row["Cool"]["n"], row["Cool"]["success"]) == (1, 0.0) and math.isnan(row["Cool"]["se"])
    assert row["Look"]["n"] == 0
    assert (row["All"]["n"], row["All"]["success"]) == (5, 0.6)  # the unknown type counts here


def test_markdown_prints_percent_with_se_and_a_dash_for_no_episodes():
    rows = task_type_rows({"bc": [_episode("pick_and_place_simple", True),
                                  _episode("pick_and_place_simple", False)]})
    text = task_type_markdown(rows)
    head, rule, line = text.strip().splitlines()
    assert head.startswith("| model | Pick (n=2) | Look (n=0) |") and "All (n=2)" in head
    assert rule.count("|---") == 8
    assert line == "| bc | 50.0 ± 50.0 | – | – | – | – | – | 50.0 ± 50.0 |"
