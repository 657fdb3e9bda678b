"""What an evaluation runs: :class:`EvalConfig`, its wrapper stack and its episodes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from arlarena_baselines.bounds import Bounded, bounded
from arlarena_baselines.rollout.envs import EnvFactory
from arlarena_baselines.rollout.episodes import Start, Task

__all__ = ["EvalConfig"]


@dataclass(frozen=True)
class EvalConfig(Bounded):
    """What to evaluate on.

    Attributes:
        stack: the env-stack settings (:class:`~arlarena_baselines.rollout.envs.EnvFactory`:
            the env and its ``gymnasium.make`` keyword arguments, the history length, the
            format check (``study``: the env's projection in the study; ``strict``: ARLArena's)
            and its penalty, the not-understood notice, a template replacing the env's own).
        episodes: number of tasks; task ``i`` uses env seed ``seed + i``.
        samples: rollouts per task (pass@k needs ``samples >= k``).
        seed: first env seed.
        batch_size: episodes in flight at once (one agent call per turn covers them all).
        reset_options: ``options`` for every ``reset`` (e.g. ``{"split": "eval"}``).
        record: fields added to every episode record (e.g. ``{"panel": {...}}``: the task
            panel the tasks come from, with its hash).
        max_turns: a turn limit (``None``: none).
        env_workers: ``0``: the envs step in this process; ``N`` worker processes; ``"ray"``,
            ``"ray:N"``: Ray actors (:func:`~arlarena_baselines.rollout.pools.make_env_pool`).

    A value out of its field's bounds raises a one-line ``ValueError`` when the config is made.
    """

    stack: EnvFactory = field(default_factory=EnvFactory)
    episodes: int = bounded(50, ge=1)
    samples: int = bounded(1, ge=1)
    seed: int = bounded(0, ge=0)
    batch_size: int = bounded(16, ge=1)
    reset_options: dict[str, Any] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)
    max_turns: int | None = bounded(None, ge=1)
    env_workers: int | str = 0

    @property
    def env(self) -> str:
        """The env's CLI name or gymnasium id (the stack's)."""
        return self.stack.env

    def starts(self) -> list[Start]:
        """Every episode: each task's samples, ``seed=S/sample=K`` the ``K``-th on env seed
        ``S`` (the name of its random stream, and what a resume matches)."""
        return [Start(Task(f"seed={s}", s), k, f"seed={s}/sample={k}")
                for s in range(self.seed, self.seed + self.episodes) for k in range(self.samples)]

