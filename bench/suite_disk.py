"""How much of the temporary folder the test suite takes, against the room it asks for.

Run ``python bench/suite_disk.py`` (``--workers 2``, as ``make test``; more arguments go to
pytest, e.g. ``tests/test_train_methods.py``). It runs pytest with ``TMPDIR`` at a fresh folder,
measures that folder's size every ``--every`` seconds (pytest's test folders, the
scripts' temporary folders, torch inductor's cache), and prints the peak and what is left at
the end beside pyproject's ``tmp_free_mb``, the free space a run asks for before it starts
(conftest.py). It exits 1 when the peak passes it, so that the number is raised with the suite.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def size_mb(folder: Path) -> float:
    """Bytes of the files under ``folder`` (files may vanish while it counts), in MB."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="2", help="pytest-xdist workers (0: one process)")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between measures")
    args, pytest_args = parser.parse_known_args()
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())
    need = float(settings["tool"]["pytest"]["ini_options"]["tmp_free_mb"])
    with tempfile.TemporaryDirectory(prefix="suite-disk-") as folder:
        os.chmod(folder, 0o1777)  # as /tmp: the sandbox's tests hand files to another user
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "-n", args.workers, "--dist", "loadscope", *pytest_args]
        run = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "TMPDIR": folder})
        peak, start = 0.0, time.monotonic()
        while run.poll() is None:
            peak = max(peak, size_mb(Path(folder)))
            time.sleep(args.every)
        left = size_mb(Path(folder))
    print(f"pytest exit {run.returncode} after {time.monotonic() - start:.0f} s")
    print(f"temporary folder: peak {peak:.0f} MB, left at the end {left:.0f} MB; the run asks "
          f"for {need:.0f} MB free (tmp_free_mb): peak / asked = {peak / need:.2f}")
    return 1 if peak > need else 0


if __name__ == "__main__":
    sys.exit(main())
