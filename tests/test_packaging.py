"""The built wheel works outside the source tree (package data included)."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def test_wheel_installs_in_a_fresh_venv_and_makes_envs(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"),
         str(ROOT)],
        check=True,
    )
    (wheel,) = (tmp_path / "dist").glob("arlarena-*.whl")
    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    # the fresh venv alone: a PYTHONPATH of the caller's (a source tree) would shadow the wheel
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([python, "-m", "pip", "install", "-q", str(wheel)], check=True, env=env)
    script = (
        "import gymnasium as gym, arlarena_envs, wrappers\n"
        "env = wrappers.PromptWrapper(gym.make('ARLArena/Sokoban-v0'))\n"
        "prompt, info = env.reset(seed=0)\n"
        "assert 'Sokoban' in prompt and info['admissible_actions']\n"
        "import arlarena_envs.base as b; print(b.__file__)\n"
    )
    out = subprocess.run([python, "-c", script], check=True, capture_output=True, text=True,
                         cwd=tmp_path, env=env)
    assert str(tmp_path / "venv") in out.stdout
    cli = subprocess.run([tmp_path / "venv" / "bin" / "arlarena", "eval", "--episodes", "2",
                          "--out", str(tmp_path / "res"), "--no-progress"],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert cli.returncode == 0, cli.stderr
    assert "| expert | ARLArena/Sokoban-v0 | all | 2 | 100.0% |" in cli.stdout
    # The task panels of data/ install with the wheel: a run takes one by name, checks it.
    panel = subprocess.run([tmp_path / "venv" / "bin" / "arlarena", "eval", "--panel",
                            "sokoban-eval", "--episodes", "2", "--out", str(tmp_path / "pan"),
                            "--no-progress"], capture_output=True, text=True, cwd=tmp_path)
    assert panel.returncode == 0, panel.stderr
    assert "first 2 of 32 tasks match" in panel.stderr
    (results,) = (tmp_path / "pan").glob("*.jsonl")
    assert '"panel": {"name": "sokoban-eval"' in results.read_text()
