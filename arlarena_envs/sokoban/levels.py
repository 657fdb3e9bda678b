"""Sokoban levels from gym-sokoban's room generator, reproducible from a seed.

Holds :class:`Level` (walls/targets plus the movable state) and :func:`generate_level`.

gym-sokoban's package ``__init__`` imports the old ``gym`` and ``pkg_resources``; only its
``room_utils`` module is needed, so it is loaded from its file alone. The generator draws from
numpy's global RNG and Python's ``random``; both are seeded from the caller's generator and
restored afterwards, so levels depend on the seed alone and global RNG users are not disturbed.
"""

from __future__ import annotations

import importlib.util
import random
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

import numpy as np

__all__ = ["Level", "LevelGenerationError", "generate_level", "gym_sokoban_dir"]

# gym-sokoban's cell codes.
WALL, FLOOR, TARGET, BOX_ON_TARGET, BOX, PLAYER = range(6)


class LevelGenerationError(RuntimeError):
    """No level meeting the constraints came out of the generator within the retry budget."""


@cache
def gym_sokoban_dir() -> Path:
    """Directory of the installed ``gym_sokoban`` package (found without importing it)."""
    spec = importlib.util.find_spec("gym_sokoban")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            "gym-sokoban is not installed: pip install gym-sokoban (its room generator makes "
            "ARLArena's Sokoban levels)"
        )
    return Path(spec.origin).parent


@cache
def _room_utils() -> ModuleType:
    path = gym_sokoban_dir() / "envs" / "room_utils.py"
    spec = importlib.util.spec_from_file_location("_arlarena_gym_sokoban_room_utils", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Level:
    """A Sokoban level: the fixed layout plus the movable state.

    Attributes:
        walls: ``(H, W)`` bool array, True where a wall is.
        targets: sorted ``(row, col)`` tuples of the box targets.
        boxes: sorted ``(row, col)`` tuples of the boxes.
        player: ``(row, col)`` of the player.
    """

    walls: np.ndarray
    targets: tuple[tuple[int, int], ...]
    boxes: tuple[tuple[int, int], ...]
    player: tuple[int, int]

    @property
    def shape(self) -> tuple[int, int]:
        return self.walls.shape  # type: ignore[return-value]

    @classmethod
    def from_room(cls, room_structure: np.ndarray, room_state: np.ndarray) -> Level:
        """Build from gym-sokoban's ``(room_structure, room_state)`` code arrays."""
        cells = lambda arr, *codes: tuple(  # noqa: E731
            sorted((int(r), int(c)) for r, c in zip(*np.nonzero(np.isin(arr, codes)), strict=True))
        )
        (player,) = cells(room_state, PLAYER)
        return cls(
            walls=room_structure == WALL,
            targets=cells(room_structure, TARGET),
            boxes=cells(room_state, BOX, BOX_ON_TARGET),
            player=player,
        )


def generate_level(
    rng: np.random.Generator,
    dim: tuple[int, int],
    num_boxes: int,
    *,
    num_gen_steps: int | None = None,
    p_change_directions: float = 0.35,
    tries: int = 100,
) -> Level:
    """Draw one level with gym-sokoban's generator, seeded from ``rng``.

    A failed draw (the generator's "score == 0" warning) is retried with a fresh seed from
    ``rng``, so the result is a pure function of ``rng``'s state.
    """
    utils = _room_utils()
    steps = num_gen_steps if num_gen_steps is not None else int(1.7 * (dim[0] + dim[1]))
    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        for _ in range(tries):
            seed = int(rng.integers(2**31 - 1))
            random.seed(seed)
            np.random.seed(seed)
            try:
                structure, state, _ = utils.generate_room(
                    dim=dim,
                    p_change_directions=p_change_directions,
                    num_steps=steps,
                    num_boxes=num_boxes,
                )
            except (RuntimeError, RuntimeWarning, ValueError):
                continue
            return Level.from_room(structure, state)
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
    raise LevelGenerationError(f"no {dim} level with {num_boxes} boxes after {tries} draws")
