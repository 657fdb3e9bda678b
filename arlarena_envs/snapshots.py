"""Envs that pickle and deep-copy as their spec and state, for Ray, multiprocessing and checkpoints.

An ARLArena env may hold live resources that cannot travel (TIR Math's sandbox pool, WebShop's
Flask app, ALFWorld's engines and Fast Downward library). So an env travels as what re-makes
it: its constructor's arguments (:class:`~arlarena_envs.base.TextEnv` records them), what its
last reset was given (the RNG as it was before it, the seed and the options) and the actions
stepped since (:class:`Episode`). Loading constructs the env again, which rebuilds those
resources, replays the reset and the actions, and puts the RNG back as it was: the copy gives
the same next observation as the original. An env whose steps are costly or not repeatable
(TIR Math runs the model's code) saves its progress instead of replaying its actions
(``TextEnv._progress`` / ``TextEnv._resume``).

Holds :class:`Episode`, :func:`snapshot` and :func:`remake`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Episode", "remake", "snapshot"]


@dataclass
class Episode:
    """What the current episode started from and what was done since.

    Attributes:
        rng: a copy of the env's generator as it was before ``reset``.
        reset_kwargs: the ``seed`` and ``options`` ``reset`` was given.
        actions: the (coerced) actions stepped since, in order.
    """

    rng: np.random.Generator
    reset_kwargs: dict[str, Any]
    actions: list[str] = field(default_factory=list)


def snapshot(env: Any) -> dict[str, Any]:
    """The state :func:`remake` needs besides the constructor's arguments."""
    return {
        "spec": env.spec,
        "rng": env._np_random,
        "seed": env._np_random_seed,
        "episode": env._episode,
        "progress": env._progress() if env._episode is not None else None,
        "ended": env._ended,
    }


def remake(cls: type, args: tuple, kwargs: dict[str, Any], state: dict[str, Any]) -> Any:
    """``cls(*args, **kwargs)`` brought to the state of :func:`snapshot` (the unpickler)."""
    env = cls(*args, **kwargs)
    env.spec = state["spec"]
    episode: Episode | None = state["episode"]
    if episode is not None:
        env.np_random = copy.deepcopy(episode.rng)
        env.reset(**episode.reset_kwargs)
        if state["progress"] is None:
            for action in episode.actions:
                env.step(action)
        else:
            env._resume(state["progress"])
            env._episode.actions = list(episode.actions)
        env._ended = state.get("ended")  # a finished episode stays finished
    env._np_random, env._np_random_seed = state["rng"], state["seed"]
    return env
