"""ALFWorld: real TextWorld games of ALFRED households, generated offline or loaded from data.

Holds :class:`ALFWorldEnv` (``ARLArena/ALFWorld-v0``), the game generator
(:func:`sample_game`, :func:`generated_game_path`, :data:`TASK_TYPES`, :data:`SPLIT_SIZES`,
:data:`SPLIT_TASK_COUNTS`), the game sources (:class:`GeneratedGames`, :class:`ALFWorldDataGames`)
and the engines that play a game (:data:`ENGINES`: ``native``, the default, and ``textworld``).

Modules: ``env`` (the Gymnasium env), ``generator``/``problem``/``scenes``/``seeding`` (offline
games), ``catalog`` (game sources), ``engines`` (the engine interface, TextWorld behind a lock),
``native`` with ``pddl``/``logic``/``textgen`` (the native engine), ``planner`` (the optimal
expert), ``handcoded`` (ALFWorld's hand-coded expert), ``differential`` (native against
TextWorld), ``policies`` (scripted players), ``translation``, ``resources``.
"""

from arlarena_envs.alfworld.catalog import ALFWorldDataGames, GameRef, GeneratedGames
from arlarena_envs.alfworld.engines import ENGINES
from arlarena_envs.alfworld.env import ALFWorldEnv
from arlarena_envs.alfworld.generator import (
    SPLIT_SIZES,
    SPLIT_TASK_COUNTS,
    TASK_TYPES,
    generated_game_path,
    sample_game,
)

__all__ = [
    "ENGINES",
    "SPLIT_SIZES",
    "SPLIT_TASK_COUNTS",
    "TASK_TYPES",
    "ALFWorldDataGames",
    "ALFWorldEnv",
    "GameRef",
    "GeneratedGames",
    "generated_game_path",
    "sample_game",
]
