"""The committed arenas (docs/arena/, and the off-policy one's two blocks in docs/arena-offpolicy/
and docs/arena-offpolicy-avx2/): their runs are finished runs of ``make arena``'s (``make
arena-offpolicy``'s) plan, with its settings, and each report is what its runs' files rebuild.
All are made in sittings (``--from`` their folder), so a folder may hold part of its plan; the
arena page (docs/arena.md) says which part."""

from __future__ import annotations

import re
import shlex
from functools import partial
from pathlib import Path

import pytest

from arlarena_baselines.arena import runner
from arlarena_baselines.arena.report import write_report
from arlarena_baselines.arena.runner import RECORD_FILE
from arlarena_baselines.cli import main

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "docs" / "arena"
OFFPOLICY = ROOT / "docs" / "arena-offpolicy"
OFFPOLICY_AVX2 = ROOT / "docs" / "arena-offpolicy-avx2"


def _invocations(variable: str) -> list[list[str]]:
    """The arguments of each ``$(VARIABLE)`` line of the Makefile (after any environment
    settings), with the variable's own: continued lines joined, the Makefile's ``:=``
    variables expanded."""
    makefile = re.sub(r"\\\n\s*", " ", (ROOT / "Makefile").read_text())
    defined = dict(re.findall(r"^(\w+) := (.*)$", makefile, re.M))

    def expand(text: str) -> str:
        return re.sub(r"\$\((\w+)\)",
                      lambda m: expand(defined[m[1]]) if m[1] in defined else m[0], text)

    base = shlex.split(re.search(r"^\S+ arena (.*)$", expand(defined[variable])).group(1))
    return [base + shlex.split(line) for line in
            re.findall(rf"^\t(?:\w+=\S+ )*\$\({variable}\) (.*)$", makefile, re.M)]


def _make_arena_invocations() -> list[list[str]]:
    """``make arena``'s invocations, pinned to the levels its committed runs were made on."""
    return [args + BEFORE_SPLIT for args in _invocations("ARENA")]


BEFORE_SPLIT = ["--set", "rollout.reset_options={}", "--set", "eval.reset_options=null"]
"""The committed runs predate Sokoban's content split (the recipe now names its splits): they
trained on every level and were evaluated on seeds 1,000,000 on of every level (the panel
sokoban-heldout-2025), and their configs name no split. Pinned here, so the test checks them
against the plan they were made by; ``make arena`` no longer resumes them."""


def _planned(args: list[str], out: Path, capsys) -> list[tuple[str, str]]:
    """``(state, folder)`` of each run a dry run of ``args`` into ``out`` lists (it refuses a
    folder of other settings, in ``out`` or in ``--from``)."""
    assert main(["arena", *args, "--out", str(out), "--dry-run"]) == 0
    return [tuple(line.split()[-2:]) for line in capsys.readouterr().out.splitlines()[:-1]]


def test_make_arena_plans_the_issues_runs(capsys, monkeypatch, tmp_path):
    """13 methods and the start on seed 0; the 6 methods × 3 lr × 3 staleness stress grid with
    two seeds; three seeds of the start and the eight methods of the findings."""
    monkeypatch.chdir(ROOT)
    counts = [len(_planned(args, tmp_path, capsys)) for args in _make_arena_invocations()]
    assert counts == [1 + 13, 6 * 3 * 3 * 2, 3 + 8 * 3]


def test_make_arena_offpolicy_plans_the_ten_methods_on_two_starts(capsys, monkeypatch,
                                                                  tmp_path):
    """Each block plans its own start and GRPO on three seeds beside its findings' methods; the
    two blocks cover the ten methods the findings name, with GRPO, the reference, in both."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(runner, "start_weights", lambda config: None)
    methods = {}
    for variable in ("ARENA_OFFPOLICY", "ARENA_OFFPOLICY_AVX2"):
        out = tmp_path / variable
        runs = {Path(folder).relative_to(out).parts for args in _invocations(variable)
                for _, folder in _planned(args, out, capsys)}
        seeds = {}
        for method, _, seed in runs:
            seeds.setdefault(method, set()).add(seed)
        assert all(s == {"seed0", "seed1", "seed2"} for s in seeds.values()), seeds
        methods[variable] = set(seeds) - {"checkpoint"}
        assert "checkpoint" in seeds and "GRPO" in methods[variable]
    assert methods["ARENA_OFFPOLICY"] & methods["ARENA_OFFPOLICY_AVX2"] == {"GRPO"}
    assert methods["ARENA_OFFPOLICY"] | methods["ARENA_OFFPOLICY_AVX2"] == {
        "GRPO", "GSPO", "CISPO", "SAPO", "CISPO_SM", "SAPO_SM", "GiGPO", "DAPO_GRPO",
        "DAPO_GiGPO", "SAMPO"}


@pytest.mark.parametrize(("folder", "invocations"),
                         [(COMMITTED, _make_arena_invocations),
                          (OFFPOLICY, partial(_invocations, "ARENA_OFFPOLICY")),
                          (OFFPOLICY_AVX2, partial(_invocations, "ARENA_OFFPOLICY_AVX2"))],
                         ids=["arena", "arena-offpolicy", "arena-offpolicy-avx2"])
def test_the_committed_runs_are_finished_runs_of_their_plan(folder, invocations, capsys,
                                                             monkeypatch):
    """Checked against the plan's settings, not against the start this checkout may hold in
    runs/ (a BC built on other CPU kernels than the runs' has other weights, and the arena
    would rightly refuse to go on from them there)."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(runner, "start_weights", lambda config: None)
    finished: set[str] = set()
    for args in invocations():
        finished |= {run for state, run in _planned(args, folder, capsys) if state == "finished"}
    committed = {str(p.parent) for p in folder.rglob(RECORD_FILE)}
    assert committed and committed == finished


@pytest.mark.parametrize("folder", [COMMITTED, OFFPOLICY, OFFPOLICY_AVX2],
                         ids=["arena", "arena-offpolicy", "arena-offpolicy-avx2"])
def test_the_committed_report_is_what_its_runs_rebuild(folder, tmp_path):
    write_report(folder, tmp_path)
    for name in ("arena.md", "arena.csv"):
        assert (tmp_path / name).read_text() == (folder / name).read_text(), name
