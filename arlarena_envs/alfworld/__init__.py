"""ALFWorld: real TextWorld games of ALFRED households, generated offline or loaded from data.

Holds :class:`ALFWorldEnv` (``ARLArena/ALFWorld-v0``), the game generator
(:func:`sample_game`, :func:`generated_game_path`, :data:`TASK_TYPES`, :data:`SPLIT_SIZES`) and
the game sources (:class:`GeneratedGames`, :class:`ALFWorldDataGames`).
"""

from arlarena_envs.alfworld.catalog import ALFWorldDataGames, GameRef, GeneratedGames
from arlarena_envs.alfworld.env import ALFWorldEnv
from arlarena_envs.alfworld.generator import (
    SPLIT_SIZES,
    TASK_TYPES,
    generated_game_path,
    sample_game,
)

__all__ = [
    "SPLIT_SIZES",
    "TASK_TYPES",
    "ALFWorldDataGames",
    "ALFWorldEnv",
    "GameRef",
    "GeneratedGames",
    "generated_game_path",
    "sample_game",
]
