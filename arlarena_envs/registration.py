"""Gymnasium ids of the ARLArena environments: the one place ids, turn limits and the study's
per-env response budgets and evaluation sampling are defined.

Holds :class:`Sampling`, :data:`ENV_SPECS` (id → entry point, turn limit, kwargs, sampling),
:data:`ENV_ALIASES` (the short names the CLI takes, e.g. ``sokoban``), :func:`resolve_env_id`,
:func:`env_sampling` and :func:`register_envs`, which ``import arlarena_envs`` calls. Entry
points are strings, so registering imports no environment module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

__all__ = [
    "ENV_ALIASES",
    "ENV_SPECS",
    "EnvSpec",
    "Sampling",
    "env_sampling",
    "register_envs",
    "resolve_env_id",
]


@dataclass(frozen=True)
class Sampling:
    """An env's response budget and evaluation sampling, from the study's example scripts.

    Attributes:
        max_tokens: tokens per response (``data.max_response_length``).
        temperature, top_p: evaluation sampling (``rollout.val_kwargs``).
        top_k: evaluation top-k; ``0`` means none (the study's ``-1`` for vLLM).
    """

    max_tokens: int
    temperature: float
    top_p: float = 1.0
    top_k: int = 0


# examples/embody_agent_trainer/train_alfworld_grpo.sh:67,92-94 and
# examples/shop_agent_trainer/Qwen3_4B/train_grpo.sh:40,94-96: 512 tokens, T 0.6, p 0.95, k 20.
_STUDY_TEXT = Sampling(512, 0.6, 0.95, 20)
# examples/game_agent_trainer/train_gigpo_ablation.sh:64,89 (500 tokens, T 0.4); top-p and
# top-k stay recipe/game_agent/config/game_.yaml:146-147's (1.0, -1).
_STUDY_SOKOBAN = Sampling(500, 0.4)
# examples/math_trainer/4B/train_grpo.sh:23,26 (T 0.6, 4,096 tokens);
# recipe/math_agent/config/math_agent_trainer.yaml:60-61 (top-k -1, top-p 0.7).
_STUDY_MATH = Sampling(4096, 0.6, 0.7)


@dataclass(frozen=True)
class EnvSpec:
    """What :func:`register_envs` passes to ``gymnasium.register`` for one id, and the env's
    :class:`Sampling` (what ``arlarena eval`` uses unless told otherwise)."""

    entry_point: str
    max_episode_steps: int
    kwargs: dict[str, Any] = field(default_factory=dict)
    sampling: Sampling = _STUDY_TEXT


_SOKOBAN = "arlarena_envs.sokoban.env:SokobanEnv"

ENV_SPECS: dict[str, EnvSpec] = {
    # Sokoban: the 6x6 one-box room of the study is the default; harder rooms get longer budgets.
    "ARLArena/Sokoban-v0": EnvSpec(_SOKOBAN, 15, {"dim": (6, 6), "num_boxes": 1}, _STUDY_SOKOBAN),
    "ARLArena/Sokoban-Visual-v0": EnvSpec(
        _SOKOBAN, 15, {"dim": (6, 6), "num_boxes": 1, "visual": True}, _STUDY_SOKOBAN
    ),
    "ARLArena/Sokoban-6x6-2b-v0": EnvSpec(
        _SOKOBAN, 30, {"dim": (6, 6), "num_boxes": 2, "max_solution_length": 30}, _STUDY_SOKOBAN
    ),
    "ARLArena/Sokoban-8x8-2b-v0": EnvSpec(
        _SOKOBAN, 40, {"dim": (8, 8), "num_boxes": 2, "max_solution_length": 40}, _STUDY_SOKOBAN
    ),
    "ARLArena/ALFWorld-v0": EnvSpec("arlarena_envs.alfworld.env:ALFWorldEnv", 50),
    # ARLArena's CPU-budget variant, not the study's: 20 turns, splits parted by content.
    "ARLArena/ALFWorld-Compact-v0": EnvSpec(
        "arlarena_envs.alfworld.compact:CompactALFWorldEnv", 20
    ),
    "ARLArena/WebShop-v0": EnvSpec("arlarena_envs.webshop.env:WebShopEnv", 15),
    "ARLArena/WebShop-Small-v0": EnvSpec(
        "arlarena_envs.webshop.env:WebShopEnv", 15, {"products": 1000}
    ),
    "ARLArena/TIRMath-v0": EnvSpec(
        "arlarena_envs.tir_math.env:TIRMathEnv", 5, sampling=_STUDY_MATH
    ),
    # ARLArena's toy task, not the study's: the short budget of ARLArena's earlier CLI default.
    "ARLArena/Bandit-v0": EnvSpec(
        "arlarena_envs.bandit.env:BanditEnv", 10, sampling=Sampling(256, 0.6, 0.95, 20)
    ),
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


def env_sampling(name: str) -> Sampling:
    """The :class:`Sampling` of a CLI name or id (the study's for its envs).

    >>> env_sampling("sokoban")
    Sampling(max_tokens=500, temperature=0.4, top_p=1.0, top_k=0)
    """
    return ENV_SPECS[resolve_env_id(name)].sampling


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
