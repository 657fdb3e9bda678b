"""The trainer's held-out evaluation plays the same episodes whatever the batch layout.

Each held-out episode samples from its own stream (run seed, episode id, turn), so how many
envs run at once and how prompts are chunked for generation change nothing: one checkpoint
compared on the same levels is compared on the same episodes.
"""

from __future__ import annotations

import pytest

from arlarena_baselines.rollout import make_env_pool
from arlarena_baselines.trainer.config import load_config
from arlarena_baselines.trainer.heldout import heldout_rollout
from arlarena_baselines.trainer.policy import Policy, env_factory

pytestmark = pytest.mark.usefixtures("isolated_cache")


def episodes(overrides: list[str]) -> list[tuple]:
    config = load_config(None, [
        "model.name=tiny", "rollout.env=sokoban", "rollout.max_turns=3",
        "rollout.max_new_tokens=6", "eval.episodes=10", "eval.temperature=1.0",
        "eval.top_k=0", "eval.top_p=1.0", *overrides,
    ])
    policy = Policy.load(config)
    with make_env_pool(env_factory(config), config.rollout.n_groups * config.rollout.group_size,
                       0) as pool:
        rollout = heldout_rollout(policy, config, pool)
    return sorted((s.traj_id, s.step, s.anchor, tuple(s.response_ids)) for s in rollout.samples)


def test_heldout_episodes_do_not_depend_on_pool_or_generation_batch_size():
    wide = episodes(["rollout.n_groups=4", "rollout.group_size=4", "rollout.gen_batch_size=64"])
    narrow = episodes(["rollout.n_groups=1", "rollout.group_size=3", "rollout.gen_batch_size=2"])
    assert wide == narrow
    assert len({e[0] for e in wide}) == 10
