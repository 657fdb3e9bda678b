"""An :class:`~arlarena_baselines.rollout.envs.EnvPool` whose envs live in Ray actors.

``arlarena train rl --env-workers ray`` (or ``ray:N``) steps the envs in Ray actors, on this
machine or across a Ray cluster (``ray start`` first, or ``RAY_ADDRESS``): slot ``i`` lives in
actor ``i % actors``, each call sends every involved actor its share at once and gathers the
answers. The pool keeps, per slot, the seed and options of its last reset and the actions
since; when an actor dies (a node lost, ``ray.kill``), the pool starts a new one, replays
those resets and actions on it (the envs are deterministic given the seed) and retries the
call, so the batch goes on as if nothing happened. An exception raised by an env is re-raised
as :class:`~arlarena_baselines.rollout.envs.EnvWorkerError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

try:
    import ray
    from ray.exceptions import RayActorError, RayTaskError
except ImportError as err:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "the Ray env pool needs Ray: pip install 'arlarena[openrlhf]' (or ray==2.55.0)"
    ) from err

from arlarena_baselines.rollout.envs import (
    EnvFactory,
    EnvPool,
    EnvWorkerError,
    ResetResult,
    SlotEnvs,
    StepResult,
    positions_by_worker,
    worker_slots,
)

__all__ = ["RayEnvPool"]

MAX_RESTARTS_PER_CALL = 3


@dataclass
class _History:
    """What brought a slot to its current state."""

    seed: int
    options: dict[str, Any] | None
    actions: list[str] = field(default_factory=list)


class _EnvActor(SlotEnvs):
    """The envs of some slots, in one Ray actor process."""

    def replay(self, histories: dict[int, _History]) -> None:
        """Bring each slot back to its state: its last reset, then its actions since."""
        for slot, history in histories.items():
            self.envs[slot].reset(seed=history.seed, options=history.options)
            for action in history.actions:
                self.envs[slot].step(action)


class RayEnvPool(EnvPool):
    """``num_envs`` env slots spread over ``actors`` Ray actors (see the module docstring).

    Args:
        factory: the env recipe (every actor builds its own envs).
        num_envs: env slots.
        actors: Ray actors (``None``: one per CPU of the Ray cluster), at most ``num_envs``.
        num_cpus: CPUs Ray reserves per actor (``None``: 1, or less when the actors outnumber
            the cluster's CPUs, so that they all start).
    """

    def __init__(
        self,
        factory: EnvFactory,
        num_envs: int,
        actors: int | None = None,
        num_cpus: float | None = None,
    ) -> None:
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(include_dashboard=False, log_to_driver=False)
        cpus = ray.cluster_resources().get("CPU", 1.0)
        if actors is None:
            actors = max(int(cpus), 1)
        if actors < 1:
            raise ValueError(f"need at least one Ray actor, got {actors}")
        if num_cpus is None:
            num_cpus = min(1.0, cpus / min(actors, num_envs))
        self.num_envs = num_envs
        self.workers = min(actors, num_envs)
        self.factory = factory
        self.histories: dict[int, _History] = {}
        self._remote = ray.remote(num_cpus=num_cpus, max_restarts=0)(_EnvActor)
        self.actors = [self._new_actor(w) for w in range(self.workers)]
        ray.get([a.__ray_ready__.remote() for a in self.actors])

    def _slots(self, worker: int) -> list[int]:
        return worker_slots(worker, self.num_envs, self.workers)

    def _new_actor(self, worker: int) -> Any:
        return self._remote.remote(self.factory, self._slots(worker))

    def _restart(self, worker: int) -> None:
        """Replace a dead actor and replay its slots' histories on the new one."""
        ray.kill(self.actors[worker])
        actor = self._new_actor(worker)
        slots = self._slots(worker)
        ray.get(actor.replay.remote({s: self.histories[s] for s in slots if s in self.histories}))
        self.actors[worker] = actor

    def _call(self, method: str, items: list[tuple[int, Any]], *args: Any) -> list[Any]:
        out: list[Any] = [None] * len(items)
        pending = positions_by_worker(items, self.workers)
        for _ in range(MAX_RESTARTS_PER_CALL + 1):
            refs = {
                w: getattr(self.actors[w], method).remote([items[p] for p in positions], *args)
                for w, positions in pending.items()
            }
            failed = {}
            for w, ref in refs.items():
                try:
                    results = ray.get(ref)
                except RayActorError:
                    failed[w] = pending[w]
                    continue
                except RayTaskError as err:
                    raise EnvWorkerError(f"an env raised in a Ray actor:\n{err}") from err
                for position, result in zip(pending[w], results, strict=True):
                    out[position] = result
            if not failed:
                return out
            for w in failed:
                self._restart(w)
            pending = failed
        raise EnvWorkerError(f"Ray env actors kept dying ({MAX_RESTARTS_PER_CALL} restarts)")

    def reset(
        self, slots: Sequence[int], seeds: Sequence[int], options: dict[str, Any] | None = None
    ) -> list[ResetResult]:
        items = [(int(i), int(s)) for i, s in zip(slots, seeds, strict=True)]
        out = self._call("reset", items, options)
        for slot, seed in items:
            self.histories[slot] = _History(seed, options)
        return out

    def step(self, slots: Sequence[int], actions: Sequence[str]) -> list[StepResult]:
        items = [(int(i), a) for i, a in zip(slots, actions, strict=True)]
        out = self._call("step", items)
        for slot, action in items:
            self.histories[slot].actions.append(action)
        return out

    def close(self) -> None:
        for actor in self.actors:
            try:
                ray.get(actor.close.remote())
            except RayActorError:
                pass
            ray.kill(actor)
        self.actors = []
        if self._owns_ray:
            ray.shutdown()
