"""Sokoban's movement rules, shared by the env and the solver.

Holds the action names, :data:`DELTAS`, and :func:`move`: one pure function so the env and the
solver can never disagree about what a move does.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ACTIONS", "DELTAS", "Boxes", "Cell", "move"]

Cell = tuple[int, int]
Boxes = frozenset[Cell]

ACTIONS: tuple[str, ...] = ("up", "down", "left", "right")
DELTAS: dict[str, Cell] = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


def move(
    walls: np.ndarray, player: Cell, boxes: Boxes, action: str
) -> tuple[Cell, Boxes, Cell | None]:
    """Apply ``action``; return ``(player, boxes, pushed_box_destination_or_None)``.

    A move into a wall, or a push of a box into a wall or another box, leaves the state as it
    is (gym-sokoban's behaviour: the turn is still spent).
    """
    dr, dc = DELTAS[action]
    nxt = (player[0] + dr, player[1] + dc)
    if walls[nxt]:
        return player, boxes, None
    if nxt not in boxes:
        return nxt, boxes, None
    beyond = (nxt[0] + dr, nxt[1] + dc)
    if walls[beyond] or beyond in boxes:
        return player, boxes, None
    return nxt, (boxes - {nxt}) | {beyond}, beyond
