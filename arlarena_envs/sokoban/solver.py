"""Shortest-solution Sokoban solver (breadth-first search over player moves).

Used as the expert agent and to prove that every generated level can be solved within the
turn budget. Levels of the registered sizes have at most a few thousand reachable states, so
plain BFS with a dead-corner prune is fast and returns a move-optimal plan.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from arlarena_envs.sokoban.rules import ACTIONS, Boxes, Cell, move

__all__ = ["dead_cells", "solve"]


def dead_cells(walls: np.ndarray, targets: frozenset[Cell]) -> frozenset[Cell]:
    """Non-target floor cells in a corner: a box pushed there can never move again."""
    dead = set()
    rows, cols = walls.shape
    for r in range(1, rows - 1):
        for c in range(1, cols - 1):
            if walls[r, c] or (r, c) in targets:
                continue
            vertical = walls[r - 1, c] or walls[r + 1, c]
            horizontal = walls[r, c - 1] or walls[r, c + 1]
            if vertical and horizontal:
                dead.add((r, c))
    return frozenset(dead)


def solve(
    walls: np.ndarray,
    targets: frozenset[Cell] | tuple[Cell, ...],
    player: Cell,
    boxes: Boxes | tuple[Cell, ...],
    *,
    max_depth: int | None = None,
    max_states: int = 2_000_000,
) -> list[str] | None:
    """Return a shortest list of moves that puts every box on a target, or ``None``.

    ``None`` means no solution of at most ``max_depth`` moves exists (or the search visited
    ``max_states`` states without finding one).
    """
    targets = frozenset(targets)
    start = (player, frozenset(boxes))
    if start[1] == targets:
        return []
    dead = dead_cells(walls, targets)
    parents: dict[tuple[Cell, Boxes], tuple[tuple[Cell, Boxes], str]] = {}
    frontier = deque([(start, 0)])
    seen = {start}
    while frontier:
        state, depth = frontier.popleft()
        if max_depth is not None and depth >= max_depth:
            continue
        for action in ACTIONS:
            new_player, new_boxes, pushed = move(walls, state[0], state[1], action)
            nxt = (new_player, new_boxes)
            if nxt in seen or pushed in dead:
                continue
            seen.add(nxt)
            parents[nxt] = (state, action)
            if new_boxes == targets:
                return _backtrack(parents, nxt, start)
            if len(seen) >= max_states:
                return None
            frontier.append((nxt, depth + 1))
    return None


def _backtrack(parents: dict, state: tuple, start: tuple) -> list[str]:
    plan = []
    while state != start:
        state, action = parents[state]
        plan.append(action)
    return plan[::-1]
