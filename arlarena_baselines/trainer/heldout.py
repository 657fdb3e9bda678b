"""Periodic evaluation on held-out env seeds with the study's evaluation sampling.

Holds :func:`heldout_rollout` (the episodes themselves, for analyses such as
``scripts/sokoban_failures.py``, and optionally their results file) and
:func:`evaluate_policy` (their metrics). Task ``i`` uses env seed ``eval.seed + i`` and
:func:`~arlarena_baselines.trainer.envs.heldout_options` (by default the env's held-out split,
which shares no content with training), one rollout each,
sampled with :func:`~arlarena_baselines.trainer.sampling.eval_sampling` (the study's for the
env by default). Every episode samples from its own random stream, so two checkpoints
evaluated with the same config play the same episodes up to their own choices: their results
compare task by task (:mod:`arlarena_baselines.evaluation.paired`). The one episode loop
(:mod:`arlarena_baselines.rollout.episodes`) plays them into step samples and, given a results
file, into the records ``arlarena eval`` writes
(:class:`~arlarena_baselines.evaluation.runner.ResultsLog`), which ``arlarena report`` and
``arlarena analyze`` read: the trainer writes one per evaluation,
``heldout/<phase>_step<N>.jsonl`` in the run folder.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path

from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.evaluation import ResultsLog
from arlarena_baselines.evaluation.results import finished_ids, read_records, still_to_play
from arlarena_baselines.evaluation.settings import (
    latest_settings,
    run_settings,
    settings_record,
)
from arlarena_baselines.rollout import (
    EnvPool,
    Rollout,
    SamplingParams,
    Task,
    collect,
    group_starts,
    make_env_pool,
)
from arlarena_baselines.trainer.config import TrainConfig
from arlarena_baselines.trainer.envs import eval_config
from arlarena_baselines.trainer.policy import Policy, env_factory
from arlarena_baselines.trainer.sampling import eval_sampling
from arlarena_baselines.trainer.tracking import MetricsLogger, rollout_metrics

__all__ = ["HELDOUT_DIR", "evaluate_policy", "heldout_rollout", "played_without_model"]

HELDOUT_DIR = "heldout"
"""The folder of a run that holds the results file of each held-out evaluation."""


def heldout_rollout(
    policy: Policy,
    config: TrainConfig,
    pool: EnvPool,
    *,
    sampling: SamplingParams | None = None,
    progress: bool = False,
    results: str | Path | None = None,
    label: str = "policy",
    resume: bool = False,
) -> Rollout:
    """One episode on each of ``config.eval.episodes`` held-out tasks, sampled with
    ``sampling`` (default: :func:`eval_sampling`). With ``results``, every turn and episode
    also goes to that results file as the agent ``label`` (``config.model`` being what
    answers); with ``resume`` its finished episodes are kept and not played again (the
    rollout holds the others). With ``eval.width`` wider than ``pool``, the episodes play in
    an env pool of that width (at most one slot an episode), closed on the way out."""
    e, run = config.eval, eval_config(config)
    sampling = sampling or eval_sampling(config)
    tasks = _tasks(config)
    with ExitStack() as stack:
        logs = []
        if results is not None:
            from wrappers.agents.weights import module_digest

            agent = _agent(config, sampling, module_digest(policy.model))
            logs.append(stack.enter_context(
                ResultsLog(results, run, label, agent, resume=resume)))
            tasks = [s.task for s in still_to_play(group_starts(tasks, 1), logs[0].done)]
        width = min(e.width or 0, len(tasks))
        if width > pool.num_envs:
            pool = stack.enter_context(
                make_env_pool(env_factory(config), width, config.rollout.env_workers))
        return collect(
            pool,
            policy.responder(sampling),
            tasks,
            1,
            max_turns=run.max_turns,
            reset_options=run.reset_options or None,
            seed=_sampling_seed(config),
            progress=progress,
            desc=f"held-out eval of {label}",
            also=logs,
        )


def _tasks(config: TrainConfig) -> list[Task]:
    return [Task(f"eval{i}", config.eval.seed + i) for i in range(config.eval.episodes)]


def _sampling_seed(config: TrainConfig) -> int:
    """The seed the held-out episodes sample with: the run's offset by the panel's, so runs of
    other training seeds sample differently on the same tasks."""
    return config.run.seed + config.eval.seed


def _agent(config: TrainConfig, sampling: SamplingParams, weights: str) -> dict:
    """What answers, as a results file's settings record it (the weights by their digest)."""
    return {"name": config.model.name, "weights": weights, "sampling": asdict(sampling),
            "seed": _sampling_seed(config),
            "chat_template_kwargs": dict(config.model.chat_template_kwargs)}


def played_without_model(config: TrainConfig, results: str | Path) -> bool:
    """Whether ``results`` already holds every held-out episode of ``config.model`` under the
    settings :func:`heldout_rollout` would write, whatever weights the file records: then a
    comparison can be made again from its results files alone, the model no longer on disk
    (an arena made in sittings on machines that do not keep their runs)."""
    path = Path(results)
    if not path.is_file():
        return False
    records = list(read_records(path))
    kept = latest_settings(records)
    if kept is None or not isinstance(kept.get("agent"), dict):
        return False
    run = eval_config(config)
    env = run.stack()  # for its prompt template
    try:
        agent = _agent(config, eval_sampling(config), kept["agent"].get("weights"))
        settings = settings_record(run_settings(run, agent, env))
    finally:
        env.close()
    if settings["digest"] != kept.get("digest"):
        return False
    return not still_to_play(group_starts(_tasks(config), 1), finished_ids(records))


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
    ``logger``, each episode also goes to its ``eval_episodes.jsonl`` at ``step``, and every
    turn to the results file ``heldout/<phase>_step<step>.jsonl`` (a rerun replaces it)."""
    results = None
    if logger is not None:
        results = logger.run_dir / HELDOUT_DIR / f"{logger.phase}_step{step:06d}.jsonl"
        results.unlink(missing_ok=True)
    rollout = heldout_rollout(policy, config, pool, progress=progress, results=results,
                              label=f"{logger.phase}@{step}" if logger else "policy")
    if logger is not None:
        logger.log_episodes(step, rollout.episodes)
    return {mn.eval_key(k): v for k, v in rollout_metrics(rollout).items()}
