"""The suite's use of the temporary folder (pyproject's pytest settings and conftest.py): what
a passing run leaves there, and a run refused when the folder lacks room."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _pytest(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_passing_tests_leave_no_file_behind(tmp_path):
    """Test folders and module folders (``module_tmp``) are removed once done: kept, the suite's
    models took 7.5 GB. pytest's own default (retention "all") keeps them, as the peer run
    shows."""
    files = {}
    for policy in ("failed", "all"):
        base = tmp_path / policy
        run = _pytest(f"--basetemp={base}", "-o", f"tmp_path_retention_policy={policy}",
                      "tests/tmp_use.py")
        assert run.returncode == 0, run.stdout
        files[policy] = sorted(p.name for p in base.rglob("*") if p.is_file())
    assert files["all"] == ["metrics.jsonl", "metrics.jsonl"]  # module folders go either way
    assert files["failed"] == []


def test_a_run_without_room_in_the_temporary_folder_stops_before_it_starts():
    refused = _pytest("--co", "-q", "-o", "tmp_free_mb=1000000000", "tests/tmp_use.py")
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR
    assert "MB free; the tests need 1000000000 MB there" in refused.stdout + refused.stderr
    assert _pytest("--co", "-q", "tests/tmp_use.py").returncode == 0
