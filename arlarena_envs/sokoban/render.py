"""Sokoban renderings: text rows for language models, RGB frames for the visual variant.

The text symbols are those of the agent codebases the study's results come from, so text results
stay comparable: ``#`` wall, ``_`` floor, ``O`` target, ``X`` box, ``P`` player, ``√`` box on
target, ``S`` player on target. The images reuse gym-sokoban's own 16×16 sprites.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from arlarena_envs.sokoban.levels import gym_sokoban_dir
from arlarena_envs.sokoban.rules import Boxes, Cell

__all__ = ["LEGEND", "SYMBOLS", "grid_rgb", "grid_text"]

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
