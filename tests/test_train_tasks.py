"""Which env seeds the RL trainer trains on: fresh ones, or a fixed pool (``rollout.num_tasks``)."""

from __future__ import annotations

import pytest

from arlarena_baselines.trainer.config import TrainConfig, apply_overrides, load_config
from arlarena_baselines.trainer.rl import RLTrainer

pytestmark = pytest.mark.usefixtures("isolated_cache")


def _trainer(tmp_path, *overrides: str) -> RLTrainer:
    config = load_config(None, [
        "model.name=tiny", "rollout.env=sokoban", "rollout.max_turns=1",
        "rollout.max_new_tokens=2", "rollout.n_groups=2", "rollout.group_size=1",
        "rollout.seed=100", "rl.method=GRPO", "eval.episodes=0", "run.threads=1",
        "run.progress=false", "run.tensorboard=false", f"run.out={tmp_path}", *overrides,
    ])
    return RLTrainer(config)


def _seeds(trainer: RLTrainer, step: int, round_: int = 0) -> list[int]:
    return [episode.seed for episode in trainer.rollout(step, round_).episodes]


def test_fresh_seeds_never_repeat_across_steps_and_rounds(tmp_path):
    trainer = _trainer(tmp_path)
    try:
        drawn = [_seeds(trainer, step, round_) for step in range(2) for round_ in range(2)]
    finally:
        trainer.close()
    flat = [seed for seeds in drawn for seed in seeds]
    assert len(set(flat)) == len(flat) and min(flat) == 100


def test_a_task_pool_is_drawn_shuffled_distinct_and_reproducibly(tmp_path):
    trainer = _trainer(tmp_path, "rollout.num_tasks=3")
    try:
        drawn = [_seeds(trainer, step) for step in range(6)]
        again = _seeds(trainer, 4)
    finally:
        trainer.close()
    assert all(len(set(seeds)) == 2 and set(seeds) <= {100, 101, 102} for seeds in drawn)
    assert {seed for seeds in drawn for seed in seeds} == {100, 101, 102}
    assert len({tuple(seeds) for seeds in drawn}) > 1
    assert again == drawn[4]


def test_a_pool_smaller_than_a_step_is_repeated(tmp_path):
    trainer = _trainer(tmp_path, "rollout.num_tasks=1")
    try:
        assert _seeds(trainer, 3) == [100, 100]
    finally:
        trainer.close()


def test_an_empty_pool_is_refused():
    with pytest.raises(ValueError, match="num_tasks"):
        apply_overrides(TrainConfig(), ["rollout.num_tasks=0"])
