"""ARLArena's environment suite: multi-turn text environments on the Gymnasium API.

Importing this package registers the ``ARLArena/*`` ids (see :mod:`arlarena_envs.registration`);
``gymnasium.make("ARLArena/Sokoban-v0")`` then builds an env.
"""

from arlarena_envs.base import TextEnv
from arlarena_envs.registration import ENV_ALIASES, ENV_SPECS, register_envs, resolve_env_id

__all__ = ["ENV_ALIASES", "ENV_SPECS", "TextEnv", "register_envs", "resolve_env_id"]

register_envs()
