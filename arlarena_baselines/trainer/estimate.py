"""How long an RL run will take, from a measured first turn, said before the first step when it
is more than an hour.

Holds :func:`run_estimate` (the measurement and the arithmetic) and :func:`warn_if_long`, which
:func:`~arlarena_baselines.trainer.rl.train_rl` calls before training: a plain ``arlarena train
rl --env sokoban`` (SmolLM2, 16 × 8 rollouts of up to 15 turns, 100 steps) takes hours a step on
a CPU, and should say so, and which recipe fits the machine, before it starts.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

from arlarena_baselines.rollout import Task, call_seed, collect
from arlarena_envs.registration import ENV_SPECS, resolve_env_id

__all__ = ["HOUR", "RECIPES", "RunEstimate", "run_estimate", "warn_if_long"]

HOUR = 3600.0
RECIPES: dict[str, str] = {
    "ARLArena/Sokoban-v0": "arlarena train rl --config configs/recipe/sokoban-rl.yaml (from the "
    "behaviour-cloned model of configs/recipe/sokoban-bc.yaml: `make learn`, ~1 h on 2 cores)",
}
"""The CPU recipe to use instead, per env; elsewhere a run that long belongs on GPUs."""


@dataclass(frozen=True)
class RunEstimate:
    """A run's expected length: ``turn_s`` for the first turn of one group (measured),
    ``step_s`` for a step's rollouts (every group, all ``turns`` of the limit) and ``total_s``
    for the remaining ``steps`` and the held-out evaluations. Policy updates come on top;
    rollouts in larger batches decode faster per rollout, so the rest is an upper estimate."""

    turn_s: float
    turns: int
    step_s: float
    total_s: float
    steps: int


def run_estimate(trainer: Any) -> RunEstimate:
    """Time the first turn of one group of ``trainer``'s rollouts and scale it to the run (one
    group: a whole step's first turn of SmolLM2 on a CPU takes tens of minutes itself).

    The measurement leaves the run as it was: its draws come from a stream of their own
    (:func:`~arlarena_baselines.rollout.call_seed`), and the first step resets the envs it used.
    """
    c, r = trainer.config, trainer.config.rollout
    turns = r.max_turns or ENV_SPECS[resolve_env_id(r.env)].max_episode_steps
    start = time.perf_counter()
    collect(trainer.pool, trainer.policy.responder(trainer.sampling),
            [Task("estimate", r.seed)], r.group_size, max_turns=1,
            reset_options=r.reset_options or None, seed=call_seed(c.run.seed),
            scorer=trainer.policy.score)
    turn_s = time.perf_counter() - start
    steps = c.rl.steps - trainer.step
    step_s = turn_s * r.n_groups * turns
    evals = (steps // c.eval.every if c.eval.every > 0 else 1) if c.eval.episodes else 0
    eval_s = turn_s / r.group_size * c.eval.episodes * turns
    return RunEstimate(turn_s, turns, step_s, steps * step_s + evals * eval_s, steps)


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
        f"one group ({r.group_size} rollouts) took {e.turn_s:.0f} s, and a step runs "
        f"{r.n_groups} groups x up to {e.turns} turns (up to {_duration(e.step_s)}), for "
        f"{e.steps} steps and the held-out evaluations, updates not counted. Instead: {instead}; "
        "or fewer rollouts (--rollout.n_groups, --rollout.group_size, --rollout.max_turns, "
        "--rollout.max_new_tokens, --steps)."
    )
    print(message, file=sys.stderr)
    return message
