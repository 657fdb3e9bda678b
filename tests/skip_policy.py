"""The skip policy: every run counts its skipped tests; in CI an unlisted skip fails the run.

A module-level ``pytest.importorskip``, one in a fixture, or a ``skipif`` turns tests into
skips when an optional dependency is missing or breaks after an upgrade. On a partial install
that is what a developer wants; in CI (``CI`` set to ``true``, as ``.ci/run`` does) it would
hide a broken promise behind a green run. So with ``CI=true`` a skip fails the run (exit
status 1, each skip listed) unless it matches an entry of the ``allowed_skips`` ini option:
one per line, ``NODE-ID-GLOB | REASON-SUBSTRING`` (an :func:`fnmatch.fnmatchcase` pattern of
the skipped node id, then text the skip's reason contains). Tests that failed as expected
(``xfail``) are not skips. The terminal summary says how many tests were skipped either way.

Loaded for every run by the root ``conftest.py``; under pytest-xdist (``make test`` runs two
workers) it counts and judges in the controller, over all workers.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass

import pytest

__all__ = ["Allowed", "SkipPolicy", "in_ci"]

CI_VALUES = frozenset({"1", "true", "yes"})
INI = "allowed_skips"


def in_ci() -> bool:
    """Whether this run is CI's: ``$CI`` is ``true`` (or ``1`` / ``yes``)."""
    return os.environ.get("CI", "").strip().lower() in CI_VALUES


@dataclass(frozen=True)
class Allowed:
    """One ``allowed_skips`` entry: a node-id glob and a substring of the skip's reason."""

    node_glob: str
    reason: str

    @classmethod
    def parse(cls, line: str) -> Allowed:
        glob, bar, reason = line.partition("|")
        if not bar or not glob.strip() or not reason.strip():
            raise pytest.UsageError(f"{INI}: {line!r} is not 'NODE-ID-GLOB | REASON-SUBSTRING'")
        return cls(glob.strip(), reason.strip())

    def covers(self, nodeid: str, reason: str) -> bool:
        return fnmatch.fnmatchcase(nodeid, self.node_glob) and self.reason in reason


def _reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    """The skip's reason (``longrepr`` of a skip is ``(path, line, reason)``)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


class SkipPolicy:
    """Records the run's skips and fails a CI run on one no ``allowed_skips`` entry covers."""

    def __init__(self, allowed: list[Allowed], enforce: bool) -> None:
        self.allowed = allowed
        self.enforce = enforce
        self.skips: list[tuple[str, str]] = []  # (node id, reason)

    def _record(self, report: pytest.CollectReport | pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skips.append((report.nodeid, _reason(report)))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self._record(report)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._record(report)

    @property
    def unexpected(self) -> list[tuple[str, str]]:
        return [(node, reason) for node, reason in self.skips
                if not any(entry.covers(node, reason) for entry in self.allowed)]

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        ok = (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
        if self.enforce and self.unexpected and session.exitstatus in ok:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        unexpected = self.unexpected
        terminalreporter.write_line(
            f"skip policy: {len(self.skips)} skipped, {len(self.skips) - len(unexpected)} of "
            f"them allowed ({'CI: unlisted skips fail the run' if self.enforce else 'not CI'})"
        )
        if self.enforce and unexpected:
            terminalreporter.write_sep("=", "skips not in allowed_skips (CI fails on them)",
                                       red=True)
            for node, reason in unexpected:
                terminalreporter.write_line(f"{node}: {reason}")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(INI, "skips CI accepts, one per line: 'NODE-ID-GLOB | REASON-SUBSTRING'",
                  type="linelist", default=[])


def pytest_configure(config: pytest.Config) -> None:
    """Register the policy in the run that reports: under pytest-xdist the controller, which
    receives every worker's test and skipped-collection reports (a module skipped on both
    workers once), so the count and the verdict are the whole run's."""
    if hasattr(config, "workerinput"):  # an xdist worker: its summary and status go unseen
        return
    allowed = [Allowed.parse(line) for line in config.getini(INI)]
    config.pluginmanager.register(SkipPolicy(allowed, in_ci()), "skip-policy")
