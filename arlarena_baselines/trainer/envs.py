"""The envs of a run: the rollouts' wrapper stack, its training tasks, and the held-out tasks as
an evaluation.

Holds :func:`training_options` (the reset options of the tasks training draws: the env's
training split under ``rollout.reset_options``), :func:`heldout_options` and
:func:`heldout_source` (the held-out tasks' reset options, by default the env's held-out split,
and a line saying which they are, kept in every held-out result), :func:`eval_config`
(``eval.*``'s tasks on the rollouts' wrapper stack, turn limit and env workers, as an
:class:`~arlarena_baselines.evaluation.config.EvalConfig`) and :func:`env_factory` (that
wrapper stack, ``rollout.stack``: the same for training and evaluation).
"""

from __future__ import annotations

from typing import Any

from arlarena_baselines.evaluation.config import EvalConfig
from arlarena_baselines.rollout.envs import EnvFactory
from arlarena_baselines.trainer.config import TrainConfig

__all__ = ["env_factory", "eval_config", "heldout_options", "heldout_source",
           "training_options"]


def training_options(config: TrainConfig) -> dict[str, Any]:
    """The reset options of the training tasks: the env's training split
    (:func:`~arlarena_envs.registration.env_splits`), then ``rollout.reset_options``."""
    from arlarena_envs.registration import env_splits

    return {**env_splits(config.rollout.env)[0], **config.rollout.reset_options}


def heldout_options(config: TrainConfig) -> dict[str, Any]:
    """The reset options of the held-out tasks: ``eval.reset_options`` when set, else the env's
    held-out split, else (an env without one) the training tasks'."""
    from arlarena_envs.registration import env_splits

    if config.eval.reset_options is not None:
        return dict(config.eval.reset_options)
    heldout = env_splits(config.rollout.env)[1]
    return training_options(config) if heldout is None else heldout


def heldout_source(config: TrainConfig) -> str:
    """Which tasks the held-out evaluation plays, as its results record it."""
    from arlarena_envs.registration import env_splits

    options = heldout_options(config)
    if config.eval.reset_options is not None:
        return f"eval.reset_options {options} (set by the run, not the env's held-out split)"
    if env_splits(config.rollout.env)[1] is None:
        return f"the training tasks {options}: the env has no held-out tasks"
    return f"the env's held-out split {options}, disjoint from training by content"


def eval_config(config: TrainConfig) -> EvalConfig:
    """The held-out tasks of ``config`` as an evaluation (:func:`heldout_options`; every
    episode record names them, :func:`heldout_source`)."""
    r, e = config.rollout, config.eval
    return EvalConfig(
        r.stack, episodes=e.episodes, seed=e.seed, max_turns=r.max_turns,
        reset_options=heldout_options(config), env_workers=r.env_workers,
        record={"heldout": heldout_source(config)},
    )


def env_factory(config: TrainConfig) -> EnvFactory:
    """The wrapper stack of ``config.rollout`` (``rollout.stack``, shared by training and
    evaluation); a visual env is refused (the trainer's models read text only)."""
    from arlarena_envs.registration import is_visual, resolve_env_id

    r = config.rollout
    if is_visual(r.env, r.env_kwargs):
        raise ValueError(f"{resolve_env_id(r.env)} shows its state as an image, which the "
                         "trainer's text-only models never see: train on the text env")
    return r.stack
