"""Sokoban renderings: text rows for language models, RGB frames for the visual variant.

Holds :data:`SYMBOLS`, :data:`LEGEND`, :func:`grid_text` (the env's observation: one symbol per
cell), :func:`tiny_rgb_array` (the study's cell-by-cell text, what its prompts show),
:func:`grid_rgb` and :func:`gym_sokoban_dir`. The symbols are the study's: ``#`` wall, ``_``
floor, ``O`` target, ``X`` box, ``P`` player, ``√`` box on target, ``S`` player on target. The
images reuse gym-sokoban's own 16×16 sprites.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import numpy as np

from arlarena_envs.sokoban.rules import Boxes, Cell

__all__ = ["LEGEND", "SYMBOLS", "grid_rgb", "grid_text", "gym_sokoban_dir", "tiny_rgb_array"]

SYMBOLS = {
    "wall": "#",
    "floor": "_",
    "target": "O",
    "box": "X",
    "player": "P",
    "box_on_target": "√",
    "player_on_target": "S",
}
LEGEND = ", ".join(f"{symbol} {name.replace('_', ' ')}" for name, symbol in SYMBOLS.items())

_SPRITES = {
    "wall": "wall.png",
    "floor": "floor.png",
    "target": "box_target.png",
    "box": "box.png",
    "player": "player.png",
    "box_on_target": "box_on_target.png",
    "player_on_target": "player_on_target.png",
}


def _cells(
    walls: np.ndarray, targets: frozenset[Cell], player: Cell, boxes: Boxes
) -> list[list[str]]:
    rows, cols = walls.shape
    kinds = [["wall" if walls[r, c] else "floor" for c in range(cols)] for r in range(rows)]
    for r, c in targets:
        kinds[r][c] = "target"
    for r, c in boxes:
        kinds[r][c] = "box_on_target" if (r, c) in targets else "box"
    r, c = player
    kinds[r][c] = "player_on_target" if player in targets else "player"
    return kinds


def grid_text(walls: np.ndarray, targets: frozenset[Cell], player: Cell, boxes: Boxes) -> str:
    """The level as text rows, one symbol per cell."""
    return "\n".join(
        "".join(SYMBOLS[k] for k in row) for row in _cells(walls, targets, player, boxes)
    )


def tiny_rgb_array(grid: str) -> str:
    r"""The study's text of a :func:`grid_text` grid: each cell as ``" # \t"``, rows on lines.

    Its env's ``tiny_rgb_array`` mode, the grid its prompts show (a space each side of the
    symbol, a tab after every cell, the last one included).

    >>> tiny_rgb_array("#_P\n#XO")
    ' # \t _ \t P \t\n # \t X \t O \t'
    """
    return "\n".join("".join(f" {cell} \t" for cell in row) for row in grid.split("\n"))


@cache
def gym_sokoban_dir() -> Path:
    """Directory of the installed ``gym_sokoban`` package (found without importing it: its
    ``__init__`` imports the old ``gym``)."""
    origin = getattr(importlib.util.find_spec("gym_sokoban"), "origin", None)
    if origin is None:
        raise ModuleNotFoundError("gym-sokoban is not installed: pip install gym-sokoban (its "
                                  "sprites draw the visual Sokoban's frames)")
    return Path(origin).parent


@cache
def _sprites() -> dict[str, np.ndarray]:
    from PIL import Image

    surface = gym_sokoban_dir() / "envs" / "surface"
    return {
        kind: np.asarray(Image.open(surface / name).convert("RGB"), dtype=np.uint8)
        for kind, name in _SPRITES.items()
    }


def grid_rgb(walls: np.ndarray, targets: frozenset[Cell], player: Cell, boxes: Boxes) -> np.ndarray:
    """The level as an ``(16·H, 16·W, 3)`` uint8 image made of gym-sokoban's sprites."""
    sprites = _sprites()
    kinds = _cells(walls, targets, player, boxes)
    return np.concatenate(
        [np.concatenate([sprites[k] for k in row], axis=1) for row in kinds], axis=0
    )
