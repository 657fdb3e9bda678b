"""The envs of a run: the rollouts' wrapper stack, and the held-out tasks as an evaluation.

Holds :func:`eval_config` (``eval.*``'s tasks on the rollouts' wrapper stack, turn limit and
env workers, as an :class:`~arlarena_baselines.evaluation.config.EvalConfig`) and
:func:`env_factory` (that wrapper stack, ``rollout.stack``: the same for training and
evaluation).
"""

from __future__ import annotations

from arlarena_baselines.evaluation.config import EvalConfig
from arlarena_baselines.rollout.envs import EnvFactory
from arlarena_baselines.trainer.config import TrainConfig

__all__ = ["env_factory", "eval_config"]


def eval_config(config: TrainConfig) -> EvalConfig:
    """The held-out tasks of ``config`` as an evaluation (its reset options: ``eval``'s, by
    default the rollouts')."""
    r, e = config.rollout, config.eval
    return EvalConfig(
        r.stack, episodes=e.episodes, seed=e.seed, max_turns=r.max_turns,
        reset_options=dict((r.reset_options if e.reset_options is None else e.reset_options)
                           or {}), env_workers=r.env_workers,
    )


def env_factory(config: TrainConfig) -> EnvFactory:
    """The wrapper stack of ``config.rollout`` (shared by training and evaluation)."""
    return config.rollout.stack
