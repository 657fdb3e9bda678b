"""Periodic evaluation on held-out env seeds with the study's evaluation sampling.

Holds :func:`heldout_rollout` (the episodes themselves, for analyses
such as ``scripts/sokoban_failures.py``) and :func:`evaluate_policy` (their metrics). Task ``i``
uses env seed ``eval.seed + i`` (far from the training seeds) and ``eval.reset_options`` (by
default the rollout's), one rollout each, sampled with
:func:`~arlarena_baselines.trainer.sampling.eval_sampling` (the study's for the env by
default). Every episode samples from its own random stream,
so two checkpoints evaluated with the same config play the same episodes up to their own
choices: their results compare task by task (:mod:`arlarena_baselines.evaluation.paired`).
"""

from __future__ import annotations

from arlarena_baselines.rollout import EnvPool, Rollout, SamplingParams, Task, collect
from arlarena_baselines.trainer.config import TrainConfig
from arlarena_baselines.trainer.keys import eval_key, rollout_metrics
from arlarena_baselines.trainer.policy import Policy
from arlarena_baselines.trainer.sampling import eval_sampling
from arlarena_baselines.trainer.tracking import MetricsLogger

__all__ = ["evaluate_policy", "heldout_rollout"]


def heldout_rollout(
    policy: Policy,
    config: TrainConfig,
    pool: EnvPool,
    *,
    sampling: SamplingParams | None = None,
    progress: bool = False,
) -> Rollout:
    """One episode on each of ``config.eval.episodes`` held-out tasks, sampled with
    ``sampling`` (default: :func:`eval_sampling`)."""
    e = config.eval
    tasks = [Task(f"eval{i}", e.seed + i) for i in range(e.episodes)]
    return collect(
        pool,
        policy.responder(sampling or eval_sampling(config)),
        tasks,
        1,
        max_turns=config.rollout.max_turns,
        reset_options=(config.rollout.reset_options if e.reset_options is None
                       else e.reset_options) or None,
        seed=config.run.seed + e.seed,
        progress=progress,
        desc="eval",
    )


def evaluate_policy(
    policy: Policy,
    config: TrainConfig,
    pool: EnvPool,
    *,
    logger: MetricsLogger | None = None,
    step: int = 0,
    progress: bool = False,
) -> dict[str, float]:
    """``eval/…`` metrics of the policy on ``config.eval.episodes`` held-out tasks; with a
    ``logger``, each episode also goes to its ``eval_episodes.jsonl`` at ``step``."""
    rollout = heldout_rollout(policy, config, pool, progress=progress)
    if logger is not None:
        logger.log_episodes(step, rollout.episodes)
    return {eval_key(k): v for k, v in rollout_metrics(rollout).items()}
