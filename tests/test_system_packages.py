"""``make run`` / ``make install`` on a machine without bubblewrap: they install the system
packages they need when they can, else stop before any work with one line naming the command.

A machine without bubblewrap is made by a ``PATH`` that hides ``bwrap``: a folder of links to
every program on the real ``PATH`` but it, plus stand-ins where the test decides what happens
(``id`` for a user who is not root, ``sudo`` that asks for a password, ``apt-get`` that
records its call and provides ``bwrap``, since the real one would change this machine).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "system-packages.sh"


def _machine(tmp_path: Path, stand_ins: dict[str, str]) -> dict[str, str]:
    """An environment whose ``PATH`` has no ``bwrap`` and the ``stand_ins`` (name → script)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, body in stand_ins.items():
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)
    for directory in os.environ["PATH"].split(os.pathsep):
        for program in Path(directory).glob("*") if Path(directory).is_dir() else ():
            link = folder / program.name
            if program.name != "bwrap" and not link.exists() and os.access(program, os.X_OK):
                link.symlink_to(program)
    return {**os.environ, "PATH": str(folder)}


NOT_ROOT = {"id": 'if [ "$1" = -u ]; then echo 1000; else exec /usr/bin/id "$@"; fi',
            "sudo": "echo 'sudo: a password is required' >&2; exit 1"}


def test_without_root_or_sudo_it_stops_with_the_command(tmp_path):
    done = subprocess.run([str(SCRIPT), "run", sys.executable], env=_machine(tmp_path, NOT_ROOT),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "error: make run needs the system packages bubblewrap: run `sudo apt-get install -y "
        "bubblewrap`, then make run again"]


def test_make_run_stops_before_any_work(tmp_path):
    venv = tmp_path / "venv"
    done = subprocess.run(
        ["make", "--no-print-directory", "run", f"VENV={venv}", f"PYTHON={sys.executable}"],
        cwd=ROOT, env=_machine(tmp_path, NOT_ROOT), capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and not venv.exists()
    assert done.stderr.splitlines()[0].startswith(
        "error: make run needs the system packages bubblewrap: run `sudo apt-get install -y")


def test_as_root_it_installs_what_is_missing(tmp_path):
    calls = tmp_path / "apt-calls"
    apt = (f'echo "$*" >> {calls}\n'
           f'case "$*" in *install*bubblewrap*) ln -sf /bin/true "$(dirname "$0")/bwrap";; esac')
    stand_ins = {"apt-get": apt, "id": 'if [ "$1" = -u ]; then echo 0; fi'}
    done = subprocess.run([str(SCRIPT), "install", sys.executable],
                          env=_machine(tmp_path, stand_ins), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == ["update -qq", "install -y bubblewrap"]
    assert "installing the system packages bubblewrap (apt-get)" in done.stderr


def test_with_everything_there_it_does_nothing(tmp_path):
    done = subprocess.run([str(SCRIPT), "install", sys.executable], capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
