"""Environment pools: many wrapped envs stepped together, in-process or in worker processes.

Holds :class:`EnvFactory` (a picklable recipe for the wrapper stack: ``gymnasium.make`` +
:class:`~wrappers.prompt.PromptWrapper`), the :class:`EnvPool` interface, and two pools:
:class:`InProcessEnvPool` (``--env-workers 0``) and :class:`ProcessEnvPool` (N worker
processes, each owning a share of the env slots). :func:`~.pools.make_env_pool` picks one, or
the Ray-actor pool of :mod:`~arlarena_baselines.rollout.ray_pool` (``--env-workers ray``).
Another backend plugs in by implementing :class:`EnvPool`'s three methods.
"""

from __future__ import annotations

import multiprocessing as mp
import traceback
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from arlarena_baselines.bounds import Bounded, bounded

if TYPE_CHECKING:  # gymnasium loads when an env is built, not with a training config
    import gymnasium as gym

__all__ = [
    "EnvFactory",
    "EnvPool",
    "EnvWorkerError",
    "InProcessEnvPool",
    "ProcessEnvPool",
    "ResetResult",
    "SlotEnvs",
    "StepResult",
    "positions_by_worker",
    "worker_slots",
]

ResetResult = tuple[str, dict[str, Any]]
StepResult = tuple[str, float, bool, bool, dict[str, Any]]


@dataclass(frozen=True)
class EnvFactory(Bounded):
    """The env-stack settings, one value: how to build one env of the wrapper stack
    (``gymnasium.make`` + :class:`~wrappers.prompt.PromptWrapper`). An evaluation holds one
    (:class:`~arlarena_baselines.evaluation.config.EvalConfig`'s ``stack``), and so does
    training: :class:`~arlarena_baselines.trainer.config.RolloutConfig` is built on this class,
    so these fields are its flat YAML keys (``rollout.history_length``, …), and
    ``rollout.stack`` is their value. Picklable, so workers build their own.

    Attributes:
        env: env CLI name (``sokoban``) or full gymnasium id (``ARLArena/Bandit-v0``).
        env_kwargs: keyword arguments for ``gymnasium.make``.
        history_length: (observation, action) pairs shown in the prompt.
        format_penalty: reward lost by a response failing the format check.
        template: a template name that replaces the env's own (e.g. ``sokoban_compact``, see
            :mod:`~arlarena_baselines.rollout.templates`); ``None`` keeps the study's.
        format_check: ``study`` (the study's per-env projection) or ``strict`` (ARLArena's
            strict check); see :data:`wrappers.format.FORMAT_CHECKS`.
        notice: tell the model when its previous response had no ``<action>`` block.
    """

    env: str = "sokoban"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    history_length: int = bounded(2, ge=0)
    format_penalty: float = bounded(0.1, ge=0)
    template: str | None = None
    format_check: str = "study"
    notice: bool = False

    def __call__(self) -> gym.Env:
        import gymnasium as gym

        import arlarena_envs
        from arlarena_baselines.rollout import templates
        from wrappers.prompt import PromptWrapper

        env = gym.make(arlarena_envs.resolve_env_id(self.env), **self.env_kwargs)
        wrapped = PromptWrapper(
            env, self.history_length, self.format_penalty, self.format_check, self.notice
        )
        if self.template is not None:
            templates.check_template(self.template)
            wrapped.template = self.template
        return wrapped

    @classmethod
    def of(cls, settings: Any) -> EnvFactory:
        """The stack that ``settings`` holds under these fields' names (a training config's
        ``rollout`` section, a subclass: this value alone, picklable and comparable)."""
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})


def worker_slots(worker: int, num_envs: int, workers: int) -> list[int]:
    """The slots that live in ``worker`` when slot ``i`` lives in worker ``i % workers``."""
    return list(range(worker, num_envs, workers))


def positions_by_worker(items: Sequence[tuple[int, Any]], workers: int) -> dict[int, list[int]]:
    """The positions of ``(slot, value)`` items per worker (slot ``i`` in ``i % workers``), in
    order, so each worker gets its share of a call in one message.

    >>> positions_by_worker([(0, "a"), (3, "b"), (1, "c"), (2, "d")], 2)
    {0: [0, 3], 1: [1, 2]}
    """
    shares: dict[int, list[int]] = {}
    for position, (slot, _) in enumerate(items):
        shares.setdefault(slot % workers, []).append(position)
    return shares


class EnvWorkerError(RuntimeError):
    """An env raised inside a worker process; the message carries the worker's traceback."""


class EnvPool(ABC):
    """``num_envs`` env slots addressed by index; each call handles many slots at once."""

    num_envs: int

    @abstractmethod
    def reset(
        self, slots: Sequence[int], seeds: Sequence[int], options: dict[str, Any] | None = None
    ) -> list[ResetResult]:
        """Reset each slot with its seed; return ``(obs, info)`` per slot, in order."""

    @abstractmethod
    def step(self, slots: Sequence[int], actions: Sequence[str]) -> list[StepResult]:
        """Step each slot with its action; return the five-tuple per slot, in order."""

    def env(self, slot: int) -> gym.Env | None:
        """The env object of ``slot`` when it lives in this process (privileged agents need
        it), else ``None``."""
        return None

    def close(self) -> None:
        """Close every env and stop any worker."""

    def __enter__(self) -> EnvPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SlotEnvs:
    """The envs of some slots in one process (the pool's, a worker's or a Ray actor's), each
    call on ``(slot, seed)`` or ``(slot, action)`` items."""

    def __init__(self, factory: EnvFactory, slots: Iterable[int]) -> None:
        self.envs = {slot: factory() for slot in slots}

    def reset(
        self, items: Iterable[tuple[int, int]], options: dict[str, Any] | None
    ) -> list[ResetResult]:
        return [self.envs[slot].reset(seed=int(seed), options=options) for slot, seed in items]

    def step(self, items: Iterable[tuple[int, str]]) -> list[StepResult]:
        return [self.envs[slot].step(action) for slot, action in items]

    def close(self) -> None:
        for env in self.envs.values():
            env.close()


class InProcessEnvPool(EnvPool):
    """Envs in this process, stepped one after the other (cheap envs: Sokoban, bandit).

    >>> pool = InProcessEnvPool(EnvFactory("ARLArena/Bandit-v0"), 2)
    >>> [info["won"] for _, info in pool.reset([0, 1], [0, 1])]
    [False, False]
    >>> [round(r[1], 1) for r in pool.step([0, 1], ["<think>a</think><action>blue</action>",
    ...                                             "blue"])]  # the second: no <action>
    [1.0, -0.1]
    >>> pool.close()
    """

    def __init__(self, factory: EnvFactory, num_envs: int) -> None:
        self.num_envs = num_envs
        self.slots = SlotEnvs(factory, range(num_envs))

    def reset(
        self, slots: Sequence[int], seeds: Sequence[int], options: dict[str, Any] | None = None
    ) -> list[ResetResult]:
        return self.slots.reset(zip(slots, seeds, strict=True), options)

    def step(self, slots: Sequence[int], actions: Sequence[str]) -> list[StepResult]:
        return self.slots.step(zip(slots, actions, strict=True))

    def env(self, slot: int) -> gym.Env:
        return self.slots.envs[slot]

    def close(self) -> None:
        self.slots.close()
        self.slots.envs = {}


def _worker(factory: EnvFactory, slots: list[int], conn: Any) -> None:
    """Worker loop: build the envs of ``slots``, then answer reset/step/close commands."""
    try:
        envs = SlotEnvs(factory, slots)
        conn.send(("ok", None))
    except Exception:
        conn.send(("error", traceback.format_exc()))
        return
    while True:
        try:
            command, payload = conn.recv()
        except (EOFError, KeyboardInterrupt):
            break
        if command == "close":
            break
        try:
            items = payload["items"]
            out = envs.reset(items, payload["options"]) if command == "reset" else envs.step(items)
            conn.send(("ok", out))
        except Exception:
            conn.send(("error", traceback.format_exc()))
    envs.close()
    conn.close()


class ProcessEnvPool(EnvPool):
    """Envs in ``workers`` processes; slot ``i`` lives in worker ``i % workers``.

    Each call sends every involved worker its share of the slots, then gathers the answers, so
    the workers step their envs in parallel (for envs whose steps cost: ALFWorld, WebShop, TIR
    Math). Workers start with the ``spawn`` method (safe beside torch's threads). An exception
    in an env is re-raised here as :class:`EnvWorkerError` with the worker's traceback.
    """

    def __init__(self, factory: EnvFactory, num_envs: int, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.num_envs = num_envs
        self.workers = min(workers, num_envs)
        ctx = mp.get_context("spawn")
        self._conns = []
        self._procs = []
        for w in range(self.workers):
            parent, child = ctx.Pipe()
            slots = worker_slots(w, num_envs, self.workers)
            proc = ctx.Process(target=_worker, args=(factory, slots, child), daemon=True)
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
        for conn in self._conns:
            self._receive(conn)

    def _receive(self, conn: Any) -> Any:
        try:
            status, payload = conn.recv()
        except EOFError as err:
            raise EnvWorkerError("an env worker process died") from err
        if status == "error":
            raise EnvWorkerError(f"an env raised in a worker process:\n{payload}")
        return payload

    def _call(self, command: str, items: list[tuple[int, Any]], **extra: Any) -> list[Any]:
        shares = positions_by_worker(items, self.workers)
        for w, positions in shares.items():
            self._conns[w].send((command, {"items": [items[p] for p in positions], **extra}))
        out: list[Any] = [None] * len(items)
        for w, positions in shares.items():
            for position, result in zip(positions, self._receive(self._conns[w]), strict=True):
                out[position] = result
        return out

    def reset(
        self, slots: Sequence[int], seeds: Sequence[int], options: dict[str, Any] | None = None
    ) -> list[ResetResult]:
        items = [(int(i), int(s)) for i, s in zip(slots, seeds, strict=True)]
        return self._call("reset", items, options=options)

    def step(self, slots: Sequence[int], actions: Sequence[str]) -> list[StepResult]:
        return self._call("step", [(int(i), a) for i, a in zip(slots, actions, strict=True)])

    def close(self) -> None:
        for conn in self._conns:
            try:
                conn.send(("close", None))
            except (BrokenPipeError, OSError):
                pass
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
        for conn in self._conns:
            conn.close()
        self._conns, self._procs = [], []
