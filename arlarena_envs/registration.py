"""Gymnasium ids of the ARLArena environments: the one place ids and turn limits are defined.

Holds :data:`ENV_SPECS` (id → entry point, turn limit, kwargs), :data:`ENV_ALIASES` (the short
names the CLI takes, e.g. ``sokoban``) and :func:`register_envs`, which ``import arlarena_envs``
calls. Entry points are strings, so registering imports no environment module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

__all__ = ["ENV_ALIASES", "ENV_SPECS", "EnvSpec", "register_envs", "resolve_env_id"]


@dataclass(frozen=True)
class EnvSpec:
    """What :func:`register_envs` passes to ``gymnasium.register`` for one id."""

    entry_point: str
    max_episode_steps: int
    kwargs: dict[str, Any] = field(default_factory=dict)


_SOKOBAN = "arlarena_envs.sokoban.env:SokobanEnv"

ENV_SPECS: dict[str, EnvSpec] = {
    # Sokoban: the 6x6 one-box room of the study is the default; harder rooms get longer budgets.
    "ARLArena/Sokoban-v0": EnvSpec(_SOKOBAN, 15, {"dim": (6, 6), "num_boxes": 1}),
    "ARLArena/Sokoban-Visual-v0": EnvSpec(
        _SOKOBAN, 15, {"dim": (6, 6), "num_boxes": 1, "visual": True}
    ),
    "ARLArena/Sokoban-6x6-2b-v0": EnvSpec(
        _SOKOBAN, 30, {"dim": (6, 6), "num_boxes": 2, "max_solution_length": 30}
    ),
    "ARLArena/Sokoban-8x8-2b-v0": EnvSpec(
        _SOKOBAN, 40, {"dim": (8, 8), "num_boxes": 2, "max_solution_length": 40}
    ),
    "ARLArena/ALFWorld-v0": EnvSpec("arlarena_envs.alfworld.env:ALFWorldEnv", 50),
    "ARLArena/WebShop-v0": EnvSpec("arlarena_envs.webshop.env:WebShopEnv", 15),
    "ARLArena/WebShop-Small-v0": EnvSpec(
        "arlarena_envs.webshop.env:WebShopEnv", 15, {"products": 1000}
    ),
    "ARLArena/TIRMath-v0": EnvSpec("arlarena_envs.tir_math.env:TIRMathEnv", 5),
    "ARLArena/Bandit-v0": EnvSpec("arlarena_envs.bandit.env:BanditEnv", 10),
}

ENV_ALIASES: dict[str, str] = {
    "sokoban": "ARLArena/Sokoban-v0",
    "alfworld": "ARLArena/ALFWorld-v0",
    "webshop": "ARLArena/WebShop-v0",
    "math": "ARLArena/TIRMath-v0",
}


def resolve_env_id(name: str) -> str:
    """Map a CLI name (``sokoban``) or a full id to a registered gymnasium id."""
    env_id = ENV_ALIASES.get(name.lower(), name)
    if env_id not in ENV_SPECS:
        known = ", ".join(sorted(ENV_ALIASES) + sorted(ENV_SPECS))
        raise ValueError(f"unknown environment {name!r}; known: {known}")
    return env_id


def register_envs() -> None:
    """Register every id of :data:`ENV_SPECS` with gymnasium (idempotent)."""
    for env_id, spec in ENV_SPECS.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point=spec.entry_point,
            max_episode_steps=spec.max_episode_steps,
            kwargs=dict(spec.kwargs),
            disable_env_checker=True,
        )
