"""Scripted ALFWorld players for tests and benchmarks: the planner expert and a random agent.

Holds :class:`EpisodeResult`, :func:`expert_policy`, :func:`random_admissible_policy` and
:func:`run_policy` (one timed episode of a policy on a bare
:class:`~arlarena_envs.alfworld.env.ALFWorldEnv`: no prompts, so not the rollouts' loop).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from arlarena_envs.alfworld.env import ALFWorldEnv

__all__ = ["EpisodeResult", "Policy", "expert_policy", "random_admissible_policy", "run_policy"]

Policy = Callable[[ALFWorldEnv, dict[str, Any]], str | None]
"""``(env, info) -> command``; ``None`` ends the episode early."""


@dataclass
class EpisodeResult:
    """What one episode gave: success, steps, the game and the time spent resetting/stepping
    (wall-clock seconds, and this process's CPU seconds, which a busy machine barely moves)."""

    won: bool
    steps: int
    task_type: str
    split: str
    index: int
    gamefile: str
    last_observation: str
    reset_seconds: float
    reset_cpu_seconds: float
    step_seconds: list[float] = field(default_factory=list)
    step_cpu_seconds: list[float] = field(default_factory=list)


def expert_policy(env: ALFWorldEnv, info: dict[str, Any]) -> str | None:
    """The env's planner expert (:meth:`ALFWorldEnv.expert_action`)."""
    return env.expert_action()


def random_admissible_policy(seed: int) -> Policy:
    """A policy that picks uniformly among the admissible commands (seeded)."""
    rng = random.Random(seed)

    def choose(env: ALFWorldEnv, info: dict[str, Any]) -> str | None:
        actions = info["admissible_actions"]
        return actions[int(rng.random() * len(actions))] if actions else None

    return choose


def run_policy(
    env: ALFWorldEnv,
    policy: Policy,
    *,
    options: dict[str, Any] | None = None,
    seed: int | None = None,
    max_steps: int = 50,
) -> EpisodeResult:
    """Reset ``env`` (with ``seed``/``options``) and let ``policy`` act for up to ``max_steps``."""
    start, cpu = time.perf_counter(), time.process_time()
    obs, info = env.reset(seed=seed, options=options)
    result = EpisodeResult(
        won=False, steps=0, task_type=info["task_type"], split=info["split"],
        index=info["game_index"], gamefile=info["gamefile"], last_observation=obs,
        reset_seconds=time.perf_counter() - start, reset_cpu_seconds=time.process_time() - cpu,
    )
    while result.steps < max_steps:
        command = policy(env, info)
        if command is None:
            break
        start, cpu = time.perf_counter(), time.process_time()
        obs, _, terminated, truncated, info = env.step(command)
        result.step_seconds.append(time.perf_counter() - start)
        result.step_cpu_seconds.append(time.process_time() - cpu)
        result.steps += 1
        result.last_observation = obs
        if terminated or truncated:
            break
    result.won = bool(info["won"])
    return result
