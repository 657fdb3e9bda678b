"""The Ray env pool: the in-process pool's trajectories from Ray actors, surviving a killed actor.

64 Sokoban envs over 4 actors play scripted actions (valid moves, invalid moves, malformed
responses) on the same seeds as an :class:`InProcessEnvPool`; every reset and step result must
match. Killing an actor mid-episode (``ray.kill``) must not change a single result: the pool
rebuilds the actor and replays its slots. ``make_env_pool(..., "ray:N")`` is what
``arlarena train rl --env-workers ray:N`` builds.
"""

from __future__ import annotations

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from arlarena_baselines.cli import main  # noqa: E402
from arlarena_baselines.rollout.envs import (  # noqa: E402
    EnvFactory,
    EnvWorkerError,
    InProcessEnvPool,
)
from arlarena_baselines.rollout.pools import make_env_pool  # noqa: E402
from arlarena_baselines.rollout.ray_pool import RayEnvPool  # noqa: E402
from arlarena_baselines.trainer.config import TrainConfig, apply_overrides  # noqa: E402
from wrappers.format import format_response  # noqa: E402

ENVS, ACTORS, TURNS = 64, 4, 6
SOKOBAN = EnvFactory("sokoban")
MOVES = ["up", "down", "left", "right", "jump"]


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _actions(turn: int) -> list[str]:
    rng = np.random.default_rng(turn)
    picks = rng.integers(len(MOVES) + 1, size=ENVS)
    return ["no action here" if p == len(MOVES) else format_response("Moving.", MOVES[p])
            for p in picks]


def _play(pool, kill_at: int | None = None) -> list:
    seeds = [1000 + slot // 2 for slot in range(ENVS)]  # two envs per seed
    record = [pool.reset(range(ENVS), seeds)]
    for turn in range(TURNS):
        if turn == kill_at:
            ray.kill(pool.actors[1])
            ray.kill(pool.actors[3])
        record.append(pool.step(range(ENVS), _actions(turn)))
    return record


@pytest.fixture(scope="module")
def reference():
    pool = InProcessEnvPool(SOKOBAN, ENVS)
    try:
        return _play(pool)
    finally:
        pool.close()


def test_ray_actors_give_the_in_process_trajectories(reference):
    pool = make_env_pool(SOKOBAN, ENVS, f"ray:{ACTORS}")
    try:
        assert isinstance(pool, RayEnvPool) and len(pool.actors) == ACTORS
        assert pool.env(0) is None
        assert _play(pool) == reference
    finally:
        pool.close()


def test_a_killed_actor_is_replaced_without_losing_the_batch(reference):
    pool = RayEnvPool(SOKOBAN, ENVS, ACTORS, num_cpus=0)
    try:
        before = list(pool.actors)
        assert _play(pool, kill_at=3) == reference
        assert pool.actors[0] is before[0] and pool.actors[1] is not before[1]
        assert pool.actors[3] is not before[3]
    finally:
        pool.close()


def test_env_errors_and_bad_specs():
    pool = RayEnvPool(SOKOBAN, 2, 2, num_cpus=0)
    try:
        with pytest.raises(EnvWorkerError, match="Ray actor"):
            pool.step([0], ["up"])  # stepping before any reset
    finally:
        pool.close()
    with pytest.raises(ValueError, match="'ray' or 'ray:N'"):
        make_env_pool(SOKOBAN, 2, "ray:two")
    config = apply_overrides(TrainConfig(), ["rollout.env_workers=ray:3"])
    assert config.rollout.env_workers == "ray:3"


def test_arlarena_eval_steps_its_envs_in_ray_actors_and_plays_the_same_episodes(tmp_path):
    """``arlarena eval --env-workers ray:N`` plays, byte for byte, what in-process envs play."""
    args = ["eval", "--env", "sokoban", "--agent", "random", "--episodes", "3", "--samples", "2",
            "--batch-size", "4", "--seed", "7", "--no-progress"]
    for workers in ("0", "ray:2"):
        assert main([*args, "--env-workers", workers, "--out", str(tmp_path / workers)]) == 0
    local, remote = (
        (tmp_path / w / "Sokoban-v0__random.jsonl").read_bytes() for w in ("0", "ray:2"))
    assert local == remote and local.count(b'"type": "episode"') == 6
