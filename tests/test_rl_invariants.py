"""scripts/rl_invariants.py: the RL invariants measured on a recipe's own first step hold on a
tiny model, and a π_old that is not the distribution sampled is caught."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "rl_invariants.py"
_SPEC = importlib.util.spec_from_file_location("rl_invariants", _SCRIPT)
rl_invariants = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(rl_invariants)

TINY = ["model.name=tiny", "rollout.env=ARLArena/Bandit-v0", "rollout.env_kwargs={rounds: 2}",
        "rollout.max_new_tokens=8", "rollout.n_groups=2", "rollout.group_size=4",
        "rl.method=GRPO", "rl.lr=1e-2", "rl.mini_batches=2", "run.threads=1"]


def test_the_invariants_hold_on_a_tiny_model(tmp_path):
    args = [a for setting in TINY for a in ("--set", setting)]
    env = {**os.environ, "ARLARENA_CACHE": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, str(_SCRIPT), *args], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    verdicts = [line.split()[0] for line in out.stdout.splitlines() if line.strip()]
    assert verdicts == ["holds"] * 4  # the later mini-batch's row too


@pytest.mark.usefixtures("isolated_cache")
def test_an_old_log_prob_off_the_sampled_distribution_is_caught(monkeypatch):
    real = rl_invariants.sample_log_probs

    def shifted(*args, **kwargs):  # a forward pass that disagrees with the sampler
        log_probs, entropies = real(*args, **kwargs)
        return [[x - 0.01 for x in row] for row in log_probs], entropies

    monkeypatch.setattr(rl_invariants, "sample_log_probs", shifted)
    rows = {row["name"].split(" over ")[0]: row for row in rl_invariants.check(None, TINY)}
    assert not rows["max |old log-prob - forward pass|"]["holds"]
    assert rows["max |old log-prob - forward pass|"]["value"] == pytest.approx(0.01, abs=1e-4)
    assert rows["max |log ratio| in the first update mini-batch"]["holds"]
