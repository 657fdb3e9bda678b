"""The skip policy (``tests/skip_policy.py``) on real pytest runs of a generated test file.

The file skips the ways the suite can: a module-level ``importorskip`` of a package that is
not installed, one in a fixture, a ``skipif`` (Chromium's), and a skip inside a test; in CI
each fails the run unless ``allowed_skips`` lists it, outside CI the run stays green.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.skip_policy import in_ci

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]

SKIPPING = """
import pytest

@pytest.fixture
def engine():
    return pytest.importorskip("arlarena_no_such_engine")

def test_runs():
    assert True

def test_needs_the_engine(engine):
    pass

@pytest.mark.skipif(True, reason="needs Chromium")
def test_browser():
    pass

def test_skips_itself():
    pytest.skip("warm servers need root")

@pytest.mark.xfail(reason="a known bug", strict=True)
def test_known_bug():
    assert False
"""
MODULE_SKIP = """
import pytest

pytest.importorskip("arlarena_no_such_parity_peer")

def test_parity():
    pass
"""
SKIPPED = {
    "test_skipping.py::test_needs_the_engine": "could not import 'arlarena_no_such_engine'",
    "test_skipping.py::test_browser": "needs Chromium",
    "test_skipping.py::test_skips_itself": "warm servers need root",
    "test_module_skip.py": "could not import 'arlarena_no_such_parity_peer'",
}


@pytest.fixture
def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """``run(ci, allowed)``: pytest on the generated files, with ``CI`` and ``allowed_skips``."""
    pytester.makepyfile(test_skipping=SKIPPING, test_module_skip=MODULE_SKIP)

    def run_pytest(ci: str | None, allowed: list[str] = (), *args: str,
                   subprocess: bool = False) -> pytest.RunResult:
        if ci is None:
            monkeypatch.delenv("CI", raising=False)
        else:
            monkeypatch.setenv("CI", ci)
        lines = "".join(f"\n    {line}" for line in allowed)
        pytester.makeini(f"[pytest]\nallowed_skips ={lines}\n")
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # only the policy: faster
        runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
        return runner("-p", "tests.skip_policy", *args)

    return run_pytest


def test_in_ci_an_unlisted_skip_fails_the_run(run):
    result = run("true")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, skipped=4, xfailed=1)
    result.stdout.fnmatch_lines([
        "skip policy: 4 skipped, 0 of them allowed (CI: unlisted skips fail the run)",
        "*skips not in allowed_skips (CI fails on them)*",
    ])
    for node, reason in SKIPPED.items():
        result.stdout.fnmatch_lines([f"{node}: *{reason}*"])
    result.stdout.no_fnmatch_line("test_skipping.py::test_known_bug*")  # an xfail is no skip


def test_outside_ci_skips_are_counted_not_failed(run):
    result = run(None)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["skip policy: 4 skipped, 0 of them allowed (not CI)"])
    result.stdout.no_fnmatch_line("*skips not in allowed_skips*")


@pytest.mark.parametrize(("value", "ci"), [("true", True), ("1", True), ("TRUE", True),
                                           ("false", False), ("", False), (None, False)])
def test_ci_is_read_from_the_environment(monkeypatch, value, ci):
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert in_ci() is ci


def test_listed_skips_pass_in_ci_and_only_with_their_reason(run):
    allowed = [f"{node.split('::')[0]}::* | {reason}" for node, reason in SKIPPED.items()
               if "::" in node]
    result = run("true", [*allowed, "test_module_skip.py | arlarena_no_such_parity_peer"])
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["skip policy: 4 skipped, 4 of them allowed (CI*"])

    wrong_reason = run("true", [*allowed, "test_module_skip.py | some other reason"])
    assert wrong_reason.ret == pytest.ExitCode.TESTS_FAILED
    wrong_reason.stdout.fnmatch_lines(["test_module_skip.py: could not import*"])


def test_a_run_that_only_skips_fails_in_ci(run, pytester):
    """Every module skipped at import: pytest's 'no tests ran' (exit 5) is not a pass in CI."""
    result = run("true", [], "test_module_skip.py")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert run(None, [], "test_module_skip.py").ret == pytest.ExitCode.NO_TESTS_COLLECTED


@pytest.mark.parametrize("ci", ["true", None])
def test_under_xdist_the_controller_counts_every_workers_skips(run, monkeypatch, ci):
    """Two workers (as ``make test`` runs): the skips of both, the module skip once, and in CI
    the run fails on them, listed; workers are subprocesses, so ``tests`` goes on their path."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT), prepend=os.pathsep)
    result = run(ci, [], "-p", "xdist", "-n", "2", subprocess=True)
    result.assert_outcomes(passed=1, skipped=4, xfailed=1)
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if ci else pytest.ExitCode.OK)
    mode = "CI" if ci else "not CI"
    result.stdout.fnmatch_lines([f"skip policy: 4 skipped, 0 of them allowed ({mode}*"])
    if ci:
        for node, reason in SKIPPED.items():
            result.stdout.fnmatch_lines([f"{node}: *{reason}*"])


def test_a_malformed_entry_is_a_usage_error(run):
    result = run("true", ["test_skipping.py::* needs Chromium"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*is not 'NODE-ID-GLOB | REASON-SUBSTRING'*"])
