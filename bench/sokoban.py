"""Sokoban levels: how hard each generator's levels are, and how fast they are drawn.

Run ``python bench/sokoban.py`` (``--help`` for the counts). Sections:

* difficulty: for each generator of ``arlarena_envs.sokoban.levels.GENERATORS`` the distribution
  of the shortest solution (BFS, move-optimal) over the levels of seeds ``0..levels-1``: the
  share solved in one move, within two, the mean and the maximum, and how often the player
  starts next to a box;
* speed: levels drawn per second by ARLArena's generator against gym-sokoban's own
  ``generate_room`` on the same seeds (the peer, seeded through the global RNGs as its callers
  do), and the number of seeds whose levels differ (0: the same levels).
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import time
from functools import cache
from types import ModuleType

import numpy as np

from arlarena_envs.sokoban.levels import GENERATORS, Level, LevelGenerationError, generate_level
from arlarena_envs.sokoban.render import gym_sokoban_dir
from arlarena_envs.sokoban.solver import solve


def _draw(seed: int, dim: tuple[int, int], boxes: int, generator: str) -> Level | None:
    try:
        return generate_level(seed, dim, boxes, generator=generator)
    except LevelGenerationError:
        return None


def _share(count: int, of: list) -> str:
    return f"{100 * count / len(of):.1f}%"


def difficulty(levels: int, dim: tuple[int, int], boxes: int) -> None:
    print(f"## Shortest solutions, {dim[0]}x{dim[1]} rooms, {boxes} box(es), seeds 0..{levels - 1}")
    print("| generator | levels | 1 move | ≤ 2 moves | mean | max | player next to a box |")
    print("|---|---|---|---|---|---|---|")
    for name in GENERATORS:
        drawn = [level for s in range(levels) if (level := _draw(s, dim, boxes, name))]
        lengths = [len(solve(lv.walls, lv.targets, lv.player, lv.boxes) or ()) for lv in drawn]
        near = sum(
            any(abs(lv.player[0] - r) + abs(lv.player[1] - c) == 1 for r, c in lv.boxes)
            for lv in drawn
        )
        one, two = sum(n == 1 for n in lengths), sum(n <= 2 for n in lengths)
        print(
            f"| {name} | {len(drawn)} | {_share(one, drawn)} | {_share(two, drawn)} | "
            f"{statistics.mean(lengths):.2f} | {max(lengths)} | {_share(near, drawn)} |"
        )


@cache
def _gym_sokoban_room_utils() -> ModuleType:
    """gym-sokoban's ``room_utils`` module, loaded from its file (its package imports ``gym``)."""
    path = gym_sokoban_dir() / "envs" / "room_utils.py"
    spec = importlib.util.spec_from_file_location("_bench_gym_sokoban_room_utils", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _gym_sokoban_room(seed: int, dim: tuple[int, int], boxes: int) -> Level | None:
    random.seed(seed)
    np.random.seed(seed)
    try:
        structure, state, _ = _gym_sokoban_room_utils().generate_room(
            dim=dim, num_steps=int(1.7 * sum(dim)), num_boxes=boxes
        )
    except (RuntimeError, RuntimeWarning):
        return None
    cells = lambda arr, *codes: tuple(  # noqa: E731
        sorted((int(r), int(c)) for r, c in np.argwhere(np.isin(arr, codes)))
    )
    (player,) = cells(state, 5)
    return Level(structure == 0, cells(structure, 2), cells(state, 3, 4), player)


def speed(levels: int, dim: tuple[int, int], boxes: int) -> None:
    print(f"\n## Drawing {levels} levels, generator gym_sokoban against gym-sokoban 0.0.6")
    _gym_sokoban_room(0, dim, boxes)  # import and warm up outside the clock
    start = time.perf_counter()
    ours = [_draw(s, dim, boxes, "gym_sokoban") for s in range(levels)]
    mine = time.perf_counter() - start
    start = time.perf_counter()
    theirs = [_gym_sokoban_room(s, dim, boxes) for s in range(levels)]
    peer = time.perf_counter() - start
    differ = sum(
        (a is None) != (b is None)
        or (a is not None and b is not None and (
            not np.array_equal(a.walls, b.walls) or (a.targets, a.boxes, a.player)
            != (b.targets, b.boxes, b.player)))
        for a, b in zip(ours, theirs, strict=True)
    )
    print(f"ARLArena {levels / mine:.0f} levels/s, gym-sokoban {levels / peer:.0f} levels/s: "
          f"{peer / mine:.2f}x; seeds whose levels differ: {differ}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, default=300)
    parser.add_argument("--dim", type=int, nargs=2, default=(6, 6))
    parser.add_argument("--boxes", type=int, default=1)
    args = parser.parse_args()
    dim = (args.dim[0], args.dim[1])
    difficulty(args.levels, dim, args.boxes)
    speed(args.levels, dim, args.boxes)


if __name__ == "__main__":
    main()
