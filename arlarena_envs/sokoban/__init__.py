"""Sokoban: levels from gym-sokoban's generator, a BFS expert, text and RGB renderings."""

from arlarena_envs.sokoban.env import SokobanEnv
from arlarena_envs.sokoban.solver import solve

__all__ = ["SokobanEnv", "solve"]
