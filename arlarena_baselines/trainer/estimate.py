"""How long an RL run will take, from a measured first turn, said before the first step when it
is more than an hour.

Holds :func:`run_estimate` (the measurement and the arithmetic) and :func:`warn_if_long`, which
:func:`~arlarena_baselines.trainer.rl.train_rl` calls before training: a plain ``arlarena train
rl --env sokoban`` (SmolLM2, 16 × 8 rollouts of up to 15 turns, 100 steps) takes hours a step on
a CPU, and should say so, and which recipe fits the machine, before it starts.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from typing import Any

from arlarena_baselines.rollout import Task, call_seed, collect
from arlarena_baselines.trainer.envs import training_options
from arlarena_envs.registration import ENV_SPECS, resolve_env_id

__all__ = ["HOUR", "QUICK_S", "RECIPES", "RunEstimate", "run_estimate", "warn_if_long"]

HOUR = 3600.0
RECIPES: dict[str, str] = {
    "ARLArena/Sokoban-v0": "arlarena train rl --config configs/recipe/sokoban-rl.yaml (from the "
    "behaviour-cloned model of configs/recipe/sokoban-bc.yaml: `make learn`, ~45 min on 2 cores)",
}
"""The CPU recipe to use instead, per env; elsewhere a run that long belongs on GPUs."""


QUICK_S = 10.0
"""A first turn of one group faster than this is measured again at the run's generation batch:
a small model decodes a batch of hundreds in not much more than one group's time."""


@dataclass(frozen=True)
class RunEstimate:
    """A run's expected length: ``turn_s`` for the first turn of ``rollouts`` rollouts
    (measured: one group, or a whole generation batch where a group is quick), ``step_s`` for a
    step's rollouts (every group, all ``turns`` of the limit) and ``total_s`` for the remaining
    ``steps`` and the held-out evaluations. Policy updates come on top; every turn is counted
    at its first's cost and every episode at the turn limit, so the rest is an upper estimate."""

    turn_s: float
    rollouts: int
    turns: int
    step_s: float
    total_s: float
    steps: int


def _first_turn(trainer: Any, groups: int) -> float:
    """Seconds for the first turn of ``groups`` groups of the run's rollouts."""
    c, r = trainer.config, trainer.config.rollout
    start = time.perf_counter()
    collect(trainer.pool, trainer.policy.responder(trainer.sampling),
            [Task(f"estimate/{i}", r.seed + i) for i in range(groups)], r.group_size,
            max_turns=1, reset_options=training_options(c) or None, seed=call_seed(c.run.seed),
            scorer=trainer.policy.score)
    return time.perf_counter() - start


def run_estimate(trainer: Any) -> RunEstimate:
    """Time the first turn of one group of ``trainer``'s rollouts, or of one generation batch
    where that is quick (:data:`QUICK_S`), and scale it to the run (not a whole step: its first
    turn of SmolLM2 on a CPU takes tens of minutes itself).

    The measurement leaves the run as it was: its draws come from a stream of their own
    (:func:`~arlarena_baselines.rollout.call_seed`), and the first step resets the envs it used.
    """
    c, r = trainer.config, trainer.config.rollout
    turns = r.max_turns or ENV_SPECS[resolve_env_id(r.env)].max_episode_steps
    batch_groups = max(1, min(r.gen_batch_size, r.n_groups * r.group_size) // r.group_size)
    groups, turn_s = 1, _first_turn(trainer, 1)
    if turn_s < QUICK_S and batch_groups > 1:
        groups, turn_s = batch_groups, _first_turn(trainer, batch_groups)
    rollouts = groups * r.group_size
    steps = c.rl.steps - trainer.step
    step_s = turn_s * math.ceil(r.n_groups / groups) * turns
    evals = (steps // c.eval.every if c.eval.every > 0 else 1) if c.eval.episodes else 0
    eval_s = turn_s * math.ceil(c.eval.episodes / rollouts) * turns
    return RunEstimate(turn_s, rollouts, turns, step_s, steps * step_s + evals * eval_s, steps)


def _duration(seconds: float) -> str:
    return f"{seconds / HOUR:.1f} h" if seconds >= HOUR else f"{seconds / 60:.0f} min"


def warn_if_long(trainer: Any, limit_s: float = HOUR) -> str | None:
    """Print (stderr) and return what the run will take and what to run instead, when the
    :func:`run_estimate` is over ``limit_s``; ``None`` when it is not (or nothing is left)."""
    if trainer.step >= trainer.config.rl.steps:
        return None
    e, r = run_estimate(trainer), trainer.config.rollout
    if e.total_s <= limit_s:
        return None
    env = resolve_env_id(r.env)
    instead = RECIPES.get(env, f"arlarena train openrlhf on GPUs (e.g. `arlarena train "
                               f"openrlhf {r.env} {trainer.method.name}`)")
    message = (
        f"This run will take up to {_duration(e.total_s)} on this machine: the first turn of "
        f"{e.rollouts} rollouts took {e.turn_s:.0f} s, and a step runs "
        f"{r.n_groups} groups x up to {e.turns} turns (up to {_duration(e.step_s)}), for "
        f"{e.steps} steps and the held-out evaluations, updates not counted. Instead: {instead}; "
        "or fewer rollouts (--rollout.n_groups, --rollout.group_size, --rollout.max_turns, "
        "--rollout.max_new_tokens, --steps)."
    )
    print(message, file=sys.stderr)
    return message
