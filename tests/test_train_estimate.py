"""``arlarena train rl`` says, before its first step, how long a run of more than an hour will
take (from a measured first turn) and what to run instead; the measurement changes nothing."""

from __future__ import annotations

import pytest

from arlarena_baselines.trainer import estimate as estimate_module
from arlarena_baselines.trainer.config import load_config
from arlarena_baselines.trainer.estimate import run_estimate, warn_if_long
from arlarena_baselines.trainer.rl import RLTrainer

pytestmark = pytest.mark.usefixtures("isolated_cache")


def _trainer(tmp_path, *overrides: str) -> RLTrainer:
    config = load_config(None, [
        "model.name=tiny", "rollout.env=sokoban", "rollout.max_turns=3",
        "rollout.max_new_tokens=4", "rollout.n_groups=2", "rollout.group_size=2",
        "rl.method=GRPO", "rl.steps=1", "eval.episodes=0", "run.threads=1",
        "run.progress=false", "run.tensorboard=false", "run.checkpoint_every=0",
        f"run.out={tmp_path}", *overrides,
    ])
    return RLTrainer(config)


def test_a_run_of_more_than_an_hour_says_so_and_names_the_recipe(tmp_path, capsys):
    trainer = _trainer(tmp_path, "rl.steps=100000000", "eval.episodes=8", "eval.every=10")
    try:
        estimate = run_estimate(trainer)
        message = warn_if_long(trainer)
    finally:
        trainer.close()
    # The tiny model's group turn is quick, so a whole generation batch (both groups) is timed.
    assert estimate.turn_s > 0 and estimate.rollouts == 4 and estimate.turns == 3
    assert estimate.steps == 100_000_000
    assert estimate.step_s == pytest.approx(estimate.turn_s * 3)  # one batch x 3 turns
    assert estimate.total_s > estimate.steps * estimate.step_s  # the evaluations on top
    assert message is not None and capsys.readouterr().err.strip() == message
    assert "configs/recipe/sokoban-rl.yaml" in message and "100000000 steps" in message
    assert "the first turn of 4 rollouts" in message


def test_a_slow_model_is_timed_on_one_group_and_scaled_by_groups(tmp_path, monkeypatch):
    monkeypatch.setattr(estimate_module, "QUICK_S", 0.0)
    trainer = _trainer(tmp_path, "eval.episodes=8", "eval.every=1")
    try:
        e = run_estimate(trainer)
    finally:
        trainer.close()
    assert e.rollouts == 2 and e.step_s == pytest.approx(e.turn_s * 2 * 3)  # 2 groups x 3 turns
    assert e.total_s == pytest.approx(e.step_s + e.turn_s * 4 * 3)  # 8 held-out in calls of 2


def test_a_short_run_says_nothing(tmp_path, capsys):
    trainer = _trainer(tmp_path)
    try:
        assert warn_if_long(trainer) is None
    finally:
        trainer.close()
    assert capsys.readouterr().err == ""


def test_the_measured_turn_leaves_the_run_as_it_was(tmp_path):
    runs = []
    for measured in (False, True):
        trainer = _trainer(tmp_path / str(measured))
        try:
            if measured:
                run_estimate(trainer)
            (record,) = trainer.train()
        finally:
            trainer.close()
        runs.append({k: v for k, v in record.items() if "time" not in k and "per_s" not in k})
    assert runs[0] == runs[1]
