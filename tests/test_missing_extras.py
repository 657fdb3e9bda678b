"""A command that needs an optional part that is not installed says, in one line, which extra
installs it; never a traceback.

Each case runs ``arlarena`` in a fresh interpreter where the part cannot be imported (its
``sys.modules`` entry is ``None``, which is how Python itself marks a module as unimportable),
since the parts are installed here.
"""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

import pytest

from arlarena_baselines.cli._extras import EXTRA_OF, install_command

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = (
    "import sys\n"
    "sys.modules[sys.argv[1]] = None\n"
    "from arlarena_baselines.cli import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


def _arlarena_without(module: str, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT, module, *argv], capture_output=True,
                          text=True, cwd=ROOT, timeout=600)


@pytest.mark.parametrize(("module", "extra", "argv"), [
    ("openai", "api", ["eval", "--env", "sokoban", "--agent", "openai", "--model", "m",
                       "--episodes", "1", "--out", "{out}"]),
    ("vllm", "vllm", ["eval", "--env", "sokoban", "--agent", "vllm", "--model", "tiny",
                      "--episodes", "1", "--out", "{out}"]),
    ("openrlhf", "openrlhf", ["train", "openrlhf", "sokoban", "GRPO", "--dry-run"]),
    ("ray", "openrlhf", ["train", "rl", "--model", "tiny", "--env-workers", "ray",
                         "--steps", "1", "--out", "{out}/run"]),
])
def test_a_missing_optional_part_names_its_extra_in_one_line(module, extra, argv, tmp_path):
    done = _arlarena_without(module, *(a.format(out=tmp_path) for a in argv))
    lines = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert done.returncode in (1, 2) and "Traceback" not in done.stderr, done.stderr
    assert lines == [f"error: {module} is not installed: it comes with the '{extra}' extra: "
                     f"{install_command(extra)} (`make install` installs every extra)"]


def test_every_extra_named_is_one_of_setup_cfg():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert set(EXTRA_OF.values()) <= set(config["options.extras_require"])
