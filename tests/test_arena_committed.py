"""The committed arena (docs/arena/): it is what ``make arena`` makes, and its report is what
its runs' files rebuild."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from arlarena_baselines.arena.report import write_report
from arlarena_baselines.arena.runner import RECORD_FILE
from arlarena_baselines.cli import main

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "docs" / "arena"


def _make_arena_invocations() -> list[list[str]]:
    """The arguments of each ``$(ARENA)`` line of the Makefile's ``arena`` target, with the
    ``ARENA`` variable's own."""
    makefile = (ROOT / "Makefile").read_text()
    base = shlex.split(re.search(r"^ARENA := \S+ arena (.*)$", makefile, re.M).group(1))
    return [base + shlex.split(line) for line in
            re.findall(r"^\t\$\(ARENA\) (.*)$", makefile, re.M)]


def test_the_committed_runs_are_the_make_arena_plan_all_finished(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    planned: set[str] = set()
    for args in _make_arena_invocations():
        assert main(["arena", *args, "--out", str(COMMITTED), "--dry-run"]) == 0
        lines = capsys.readouterr().out.splitlines()[:-1]
        for line in lines:
            steps, _, folder = line.split()[-3:]
            done, total = steps.split("/")
            assert done == total, line
            planned.add(folder)
    committed = {str(p.parent) for p in COMMITTED.rglob(RECORD_FILE)}
    assert planned == committed


def test_the_committed_report_is_what_its_runs_rebuild(tmp_path):
    write_report(COMMITTED, tmp_path)
    for name in ("arena.md", "arena.csv"):
        assert (tmp_path / name).read_text() == (COMMITTED / name).read_text(), name


def test_make_arena_recipe_plans_the_issues_runs(capsys, monkeypatch, tmp_path):
    """The in-progress recipe arena's plan: 13 methods on seed 0, the 6 × 3 × 3 stress grid
    with two seeds, three seeds for the seven of the findings; every flag valid."""
    monkeypatch.chdir(ROOT)
    makefile = re.sub(r"\\\n\s*", " ", (ROOT / "Makefile").read_text())
    base = shlex.split(re.search(r"^ARENA_RECIPE := \S+ arena (.*)$", makefile, re.M).group(1))
    counts = []
    for line in re.findall(r"^\t\$\(ARENA_RECIPE\) (.*)$", makefile, re.M):
        assert main(["arena", *base, *shlex.split(line), "--out", str(tmp_path),
                     "--dry-run"]) == 0
        counts.append(int(capsys.readouterr().out.splitlines()[-1].split()[0]))
    assert counts == [1 + 13, 6 * 9 * 2, 3 + 7 * 3]
