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
        env: CLI name (``sokoban``) or full gymnasium id.
        episodes: number of tasks; task ``i`` uses env seed ``seed + i``.
        samples: rollouts per task (pass@k needs ``samples >= k``).
        seed: first env seed.
        history_length: (observation, action) pairs shown in the prompt.
        format_penalty: reward lost by a response that fails the format check.
        check, notice: :class:`~wrappers.prompt.PromptWrapper`'s format check (``study``: the
            env's projection in the study; ``strict``: ARLArena's) and not-understood notice.
        batch_size: episodes in flight at once (one agent call per turn covers them all).
        env_kwargs: keyword arguments for ``gymnasium.make``.
        reset_options: ``options`` for every ``reset`` (e.g. ``{"split": "eval"}``).
        record: fields added to every episode record (e.g. ``{"panel": {...}}``: the task
            panel the tasks come from, with its hash).
        template, max_turns: a template replacing the env's own, a turn limit (``None``: none).
        env_workers: ``0``: the envs step in this process; ``N`` worker processes; ``"ray"``,
            ``"ray:N"``: Ray actors (:func:`~arlarena_baselines.rollout.pools.make_env_pool`).

    A value out of its field's bounds raises a one-line ``ValueError`` when the config is made.
    """

    env: str = "sokoban"
    episodes: int = bounded(50, ge=1)
    samples: int = bounded(1, ge=1)
    seed: int = bounded(0, ge=0)
    history_length: int = bounded(2, ge=0)
    format_penalty: float = bounded(0.1, ge=0)
    check: str = "study"
    notice: bool = False
    batch_size: int = bounded(16, ge=1)
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    reset_options: dict[str, Any] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)
    template: str | None = None
    max_turns: int | None = bounded(None, ge=1)
    env_workers: int | str = 0

    def factory(self) -> EnvFactory:
        """The recipe of the stack every agent sees (``gymnasium.make`` + ``PromptWrapper``)."""
        return EnvFactory(self.env, dict(self.env_kwargs), self.history_length,
                          self.format_penalty, self.template, self.check, self.notice)

    def starts(self) -> list[Start]:
        """Every episode: each task's samples, ``seed=S/sample=K`` the ``K``-th on env seed
        ``S`` (the name of its random stream, and what a resume matches)."""
        return [Start(Task(f"seed={s}", s), k, f"seed={s}/sample={k}")
                for s in range(self.seed, self.seed + self.episodes) for k in range(self.samples)]

