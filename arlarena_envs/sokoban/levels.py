"""Sokoban levels by reverse play, reproducible from a seed and safe to draw from many threads.

Holds :class:`Level` (walls/targets plus the movable state), :class:`ReversePlay` (one
generator's settings), :data:`GENERATORS` (the named generators) and :func:`generate_level`.

The algorithm is gym-sokoban's: a random walk carves the room, the player and the boxes are
dropped on random floor cells (the boxes on their targets), and a depth-first search plays the
game backwards, pulling boxes off their targets, keeping the state with the best score (box
swaps × the boxes' total displacement, zero while a target is covered). Two variants:

* ``"study"`` (the default): the study's modified copy (its ``room_utils.py``): the search
  only pulls (no plain moves), at most 30 deep, counts a swap when a different box is pulled, and
  after the reverse play the player takes up to three random steps (with probability 0.8 when
  the box moved one cell, else 0.5), so the player is not always next to the box.
* ``"gym_sokoban"``: gym-sokoban 0.0.6's ``generate_room`` as shipped: pulls and moves, 300
  deep, a swap counted on every pull (it passes the caller's last pull down the recursion), no
  random steps. These are the levels ARLArena used before the study's became the default.

Each draw makes its own ``random.Random`` and ``numpy.random.RandomState`` from one seed and
calls them in the order the originals call Python's and numpy's global RNGs, so a seed gives
the original's level for that seed (the originals seed the global RNGs with it) while no global
state is read or written.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from arlarena_envs.sokoban.rules import Boxes, Cell

__all__ = ["GENERATORS", "Level", "LevelGenerationError", "ReversePlay", "generate_level"]

_PULLS: tuple[Cell, ...] = ((-1, 0), (1, 0), (0, -1), (0, 1))  # up, down, left, right
_WALK_DIRECTIONS: tuple[Cell, ...] = ((1, 0), (0, 1), (-1, 0), (0, -1))
# The 3x3 floor stamps of the topology walk, centred on the walker.
_MASKS = tuple(
    np.array(mask, dtype=int)
    for mask in (
        [[0, 0, 0], [1, 1, 1], [0, 0, 0]],
        [[0, 1, 0], [0, 1, 0], [0, 1, 0]],
        [[0, 0, 0], [1, 1, 0], [0, 1, 0]],
        [[0, 0, 0], [1, 1, 0], [1, 1, 0]],
        [[0, 0, 0], [0, 1, 1], [0, 1, 0]],
    )
)
_MAX_EXPLORED = 300_000
"""Both originals stop the reverse search after this many distinct states."""


class LevelGenerationError(RuntimeError):
    """No level meeting the constraints came out of the generator within the retry budget."""


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
    targets: tuple[Cell, ...]
    boxes: tuple[Cell, ...]
    player: Cell

    @property
    def shape(self) -> tuple[int, int]:
        return self.walls.shape  # type: ignore[return-value]


@dataclass(frozen=True)
class ReversePlay:
    """The settings that tell the two reverse-play generators apart (see the module docs).

    Attributes:
        search_depth: the reverse search's time-to-live (the originals' ``ttl``).
        plain_moves: the search also tries moves that pull nothing (gym-sokoban).
        swap_on_every_pull: every pull counts as a box swap (gym-sokoban's recursion passes the
            caller's last pull down); otherwise only a pull of a different box does (the study).
        random_steps: the player walks up to three random steps after the reverse play.
        tries: room topologies drawn before a draw gives up.
        p_change_direction: the topology walk's probability of turning at each step.
    """

    search_depth: int
    plain_moves: bool
    swap_on_every_pull: bool
    random_steps: bool
    tries: int = 4
    p_change_direction: float = 0.35


GENERATORS: dict[str, ReversePlay] = {
    "study": ReversePlay(
        search_depth=30, plain_moves=False, swap_on_every_pull=False, random_steps=True
    ),
    "gym_sokoban": ReversePlay(
        search_depth=300, plain_moves=True, swap_on_every_pull=True, random_steps=False
    ),
}


def generate_level(
    seed: int,
    dim: tuple[int, int],
    num_boxes: int,
    *,
    generator: str = "study",
    num_steps: int | None = None,
) -> Level:
    """Draw the level of ``seed`` with the named generator of :data:`GENERATORS`.

    ``num_steps`` is the topology walk's length (default ``int(1.7 * (H + W))``, 20 for 6×6, as
    both originals). Raises :class:`LevelGenerationError` when the draw fails (a room with too
    few floor cells, or no reverse play that moves a box within ``tries`` rooms), as the
    originals raise; callers retry with another seed.
    """
    if generator not in GENERATORS:
        raise KeyError(f"no Sokoban generator {generator!r}; known: {', '.join(GENERATORS)}")
    config = GENERATORS[generator]
    py_rng, np_rng = random.Random(seed), np.random.RandomState(seed % 2**32)
    steps = num_steps if num_steps is not None else int(1.7 * (dim[0] + dim[1]))
    for _ in range(config.tries):
        floor = _topology(py_rng, dim, config.p_change_direction, steps)
        player, targets = _place(np_rng, floor, num_boxes)
        walls = ~floor
        player, mapping, score = _reverse_play(walls, targets, player, config)
        if score > 0:
            break
    else:
        raise LevelGenerationError(f"seed {seed}: no {dim} room with {num_boxes} boxes moved")
    boxes = frozenset(mapping.values())
    if config.random_steps:
        displacement = sum(abs(p[0] - t[0]) + abs(p[1] - t[1]) for t, p in mapping.items())
        player = _random_steps(py_rng, walls, boxes, player, 0.8 if displacement == 1 else 0.5)
    return Level(walls, tuple(sorted(targets)), tuple(sorted(boxes)), player)


def _topology(rng: random.Random, dim: tuple[int, int], p_turn: float, steps: int) -> np.ndarray:
    """The floor (True) of a room carved by a random walk that stamps 3×3 masks."""
    rows, cols = dim
    direction = rng.sample(_WALK_DIRECTIONS, 1)[0]
    position = np.array([rng.randint(1, rows - 1), rng.randint(1, cols - 1)])
    carved = np.zeros(dim, dtype=int)
    for _ in range(steps):
        if rng.random() < p_turn:
            direction = rng.sample(_WALK_DIRECTIONS, 1)[0]
        position = position + direction
        position[0] = max(min(position[0], rows - 2), 1)
        position[1] = max(min(position[1], cols - 2), 1)
        mask = rng.sample(_MASKS, 1)[0]
        top, left = position - 1
        carved[top : top + 3, left : left + 3] += mask
    floor = carved > 0
    floor[:, [0, cols - 1]] = False
    floor[[0, rows - 1], :] = False
    return floor


def _place(
    rng: np.random.RandomState, floor: np.ndarray, num_boxes: int
) -> tuple[Cell, list[Cell]]:
    """The player's cell, then each box's target, drawn uniformly from the free floor cells."""
    free = [(int(r), int(c)) for r, c in zip(*np.nonzero(floor), strict=True)]
    if len(free) <= num_boxes + 1:
        raise LevelGenerationError(f"{len(free)} floor cells for a player and {num_boxes} boxes")
    player = free.pop(rng.randint(len(free)))
    targets = [free.pop(rng.randint(len(free))) for _ in range(num_boxes)]
    return player, targets


def _reverse_play(
    walls: np.ndarray, targets: list[Cell], start: Cell, config: ReversePlay
) -> tuple[Cell, dict[Cell, Cell], int]:
    """Depth-first reverse play from the solved state; the best state's player, its box mapping
    (target → box cell) and its score. The first state reached with the best score wins."""
    target_set = frozenset(targets)
    actions = [(d, True) for d in _PULLS]
    if config.plain_moves:
        actions += [(d, False) for d in _PULLS]
    explored: set[tuple[Cell, Boxes, Boxes]] = set()
    best: list = [-1, start, {t: t for t in targets}]

    def search(
        player: Cell, mapping: dict[Cell, Cell], pulled: Boxes, swaps: int, last: Cell | None,
        ttl: int,
    ) -> None:
        ttl -= 1
        if ttl <= 0 or len(explored) >= _MAX_EXPLORED:
            return
        boxes = frozenset(mapping.values())
        key = (player, boxes, pulled)  # the originals hash the whole cell array: the same thing
        if key in explored:
            return
        explored.add(key)
        covered = player in target_set or not boxes.isdisjoint(target_set)
        displacement = sum(abs(p[0] - t[0]) + abs(p[1] - t[1]) for t, p in mapping.items())
        score = 0 if covered else swaps * displacement
        if score > best[0]:
            best[:] = [score, player, dict(mapping)]
        for (dr, dc), pull in actions:
            step = (player[0] + dr, player[1] + dc)
            if walls[step] or step in boxes:
                continue
            behind = (player[0] - dr, player[1] - dc)
            next_mapping, next_pulled, next_last = mapping, pulled, last
            if pull and behind in boxes:
                origin = next(t for t, p in mapping.items() if p == behind)
                next_mapping = {**mapping, origin: player}
                next_pulled = (pulled - {behind}) | {player}
                next_last = origin
            next_swaps = swaps + (next_last != last)
            search(step, next_mapping, next_pulled, next_swaps,
                   last if config.swap_on_every_pull else next_last, ttl)

    search(start, {t: t for t in targets}, frozenset(), 0, None, config.search_depth)
    return best[1], best[2], best[0]


def _random_steps(
    rng: random.Random, walls: np.ndarray, boxes: Boxes, player: Cell, p_move: float
) -> Cell:
    """The study's walk after the reverse play: with probability ``p_move``, one to three steps
    to free cells never visited before, going on after each with probability 0.5."""
    if rng.random() > p_move:
        return player
    visited = [player]
    for taken in range(1, 4):
        options = [
            cell
            for cell in ((player[0] + dr, player[1] + dc) for dr, dc in _PULLS)
            if not walls[cell] and cell not in boxes and cell not in visited
        ]
        if not options:
            break
        player = rng.choice(options)
        visited.append(player)
        if taken == 3 or rng.random() > 0.5:
            break
    return player

