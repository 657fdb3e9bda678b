"""A killed RL run resumes from its last checkpoint and logs what an uninterrupted run logs.

The interrupted run is a real ``arlarena train rl`` process killed with SIGKILL after its
second checkpoint; ``--resume`` finishes it. Its metrics must equal those of an uninterrupted
run with the same seed, step for step (machine timings aside). ``arlarena plot`` then draws
the resumed run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from PIL import Image

from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.cli import main
from arlarena_baselines.rollout import EnvFactory
from arlarena_baselines.trainer.checkpoint import latest_checkpoint
from arlarena_baselines.trainer.config import load_config
from arlarena_baselines.trainer.sft import train_sft
from arlarena_baselines.trainer.tracking import EVAL_EPISODES_FILE, read_metrics

pytestmark = pytest.mark.slow

BANDIT = "ARLArena/Bandit-v0"
STEPS = 5


@pytest.fixture(scope="module")
def env_vars(module_tmp):
    """Caches go to a temporary folder, here and in the subprocesses."""
    cache = str(module_tmp("cache"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARLARENA_CACHE", cache)
        yield {**os.environ, "ARLARENA_CACHE": cache}


@pytest.fixture(scope="module")
def warm(module_tmp, env_vars):
    """A briefly cloned tiny model: some answers well-formed, so rewards (and updates) vary."""
    root = module_tmp("warm")
    prompt, _ = EnvFactory(BANDIT)().reset(seed=0)
    lines = []
    for k, arm in enumerate(("red", "green", "blue", "yellow")):
        lines.append({"type": "turn", "episode_id": str(k), "prompt": prompt,
                      "response": f"<think>ok</think><action>{arm}</action>"})
        lines.append({"type": "episode", "episode_id": str(k), "score": 0.0})
    (root / "demo.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    train_sft(load_config(None, [
        "model.name=tiny", f"rollout.env={BANDIT}", f"sft.data={root / 'demo.jsonl'}",
        "sft.min_score=0", "sft.epochs=40", "sft.batch_size=4", "sft.lr=1e-2",
        "sft.warmup_ratio=0", "eval.episodes=0", "run.threads=1", "run.progress=false",
        "run.tensorboard=false", f"run.out={root / 'sft'}",
    ]))
    return root / "sft" / "final"


def rl_flags(warm, out) -> list[str]:
    return [
        "--method", "DAPO_GiGPO", "--model", str(warm), "--env", BANDIT, "--steps", str(STEPS),
        "--out", str(out), "--threads", "1", "--set", "rollout.max_new_tokens=16",
        "--set", "rollout.n_groups=2", "--set", "rollout.group_size=4", "--set", "rl.lr=1e-3",
        "--set", "rl.adam_eps=1e-3", "--set", "rl.mini_batch_size=4", "--set", "eval.every=2",
        "--set", "eval.episodes=4", "--set", "run.checkpoint_every=1", "--set",
        "run.keep_checkpoints=2", "--set", "run.progress=false", "--set",
        "rollout.format_penalty=1.0",
    ]


def comparable(record: dict) -> dict:
    return {k: v for k, v in record.items() if not k.startswith(mn.MACHINE_PREFIXES)}


def test_killed_run_resumes_to_the_metrics_of_an_uninterrupted_run(warm, env_vars, tmp_path):
    cli = [sys.executable, "-m", "arlarena_baselines.cli", "train", "rl"]
    killed = tmp_path / "killed"
    proc = subprocess.Popen([*cli, *rl_flags(warm, killed)], env=env_vars,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            latest = latest_checkpoint(killed)
            if latest is not None and latest.name >= "step_000002":
                break
            time.sleep(0.05)
        assert proc.poll() is None, f"the run ended before the kill: {proc.stderr.read()!r}"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    stopped = latest_checkpoint(killed)
    assert stopped is not None and int(stopped.name[5:]) < STEPS

    # The uninterrupted run, in this process, with the same settings.
    full_dir = tmp_path / "full"
    assert main(["train", "rl", *rl_flags(warm, full_dir)]) == 0

    resumed = subprocess.run([*cli, *rl_flags(warm, killed), "--resume"], env=env_vars,
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]

    full, again = read_metrics(full_dir), read_metrics(killed)
    assert [r["step"] for r in again] == [r["step"] for r in full] == list(range(STEPS + 1))
    for a, b in zip(full, again, strict=True):
        assert comparable(a) == comparable(b), f"step {a['step']} differs"
    assert any(r.get("eval/success_rate") is not None for r in again[1:])
    # The held-out episodes too: logged once per evaluation, the same after the resume.
    episodes = read_metrics(killed / EVAL_EPISODES_FILE)
    assert episodes == read_metrics(full_dir / EVAL_EPISODES_FILE)
    assert sorted({(r["step"], r["task"]) for r in episodes}) == sorted(
        (r["step"], f"eval{i}") for r in full if "eval/success_rate" in r for i in range(4))
    kept = sorted(p.name for p in (killed / "checkpoints").glob("step_*"))
    assert kept == [f"step_{STEPS - 1:06d}", f"step_{STEPS:06d}"]
    assert not list((killed / "checkpoints").glob(".step_*"))  # no half-written checkpoint

    if importlib.util.find_spec("tensorboard") is not None:
        assert list((killed / "tensorboard" / "rl").glob("events.out.tfevents.*"))

    # Starting over in a used folder without --resume is refused.
    assert main(["train", "rl", *rl_flags(warm, killed)]) == 2

    # The resumed run's curves and diagnostics panel.
    assert main(["plot", str(killed)]) == 0
    for name in ("rl_curves.png", "rl_diagnostics.png"):
        with Image.open(killed / "plots" / name) as image:
            assert image.size[0] > 600 and image.size[1] > 400
    # Both runs on one figure; a comparison needs its file, and a label per run.
    figure = tmp_path / "compare.png"
    runs = [str(full_dir), str(killed)]
    assert main(["plot", *runs, "--out", str(figure), "--labels", "full,resumed"]) == 0
    with Image.open(figure) as image:
        assert image.size[0] > 600 and image.size[1] > 400
    assert main(["plot", *runs]) == 2
    assert main(["plot", *runs, "--out", str(figure), "--labels", "full"]) == 2
