"""The games an :class:`~arlarena_envs.alfworld.env.ALFWorldEnv` draws from, per split.

Holds :class:`GameRef`, :class:`GeneratedGames` (ARLArena's offline games, written to the cache
on first use) and :class:`ALFWorldDataGames` (the original ALFWorld games from
``alfworld-download``: ``$ALFWORLD_DATA/json_2.1.1/{train,valid_seen,valid_unseen}``), plus
:func:`make_source`. Both list games the same way, optionally for one task type only, so the
env picks ``index`` (or a seeded draw) the same way for either.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from arlarena_envs.alfworld.generator import (
    GENERATOR_VERSION,
    SPLIT_SIZES,
    TASK_TYPES,
    generated_game_path,
    split_task_types,
    task_indices,
)
from arlarena_envs.alfworld.resources import alfworld_data_dir, cache_dir
from arlarena_envs.alfworld.scenes import canonical_split

__all__ = ["SOURCES", "ALFWorldDataGames", "GameRef", "GeneratedGames", "make_source"]

SOURCES: tuple[str, ...] = ("generated", "alfworld_data")

_DATA_SPLIT_DIRS = {
    "train": "train",
    "eval_in_distribution": "valid_seen",
    "eval_out_of_distribution": "valid_unseen",
}
"""Our split names → ALFWorld's data folders (the names its ``AlfredTWEnv`` configs use)."""


@dataclass(frozen=True)
class GameRef:
    """One game: its ``game.tw-pddl`` path, task type, split and index in the split's full list."""

    path: Path
    task_type: str
    split: str
    index: int


def _check(split: str, task_type: str | None) -> str:
    if task_type is not None and task_type not in TASK_TYPES:
        raise ValueError(f"unknown task type {task_type!r}; known: {', '.join(TASK_TYPES)}")
    return canonical_split(split)


def _check_index(index: int, count: int, split: str) -> None:
    if not 0 <= index < count:
        raise ValueError(f"game index {index} out of range for {split} ({count} games)")


class GeneratedGames:
    """ARLArena's generated games: ``SPLIT_SIZES[split]`` per split, ALFWorld's task mix.

    Args:
        root: cache root; games go to ``<root>/generated/<GENERATOR_VERSION>/<split>/...``.
    """

    name = "generated"

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else cache_dir()

    def count(self, split: str, task_type: str | None = None) -> int:
        """Number of games of ``split`` (of ``task_type`` only, if given)."""
        split = _check(split, task_type)
        return SPLIT_SIZES[split] if task_type is None else len(task_indices(split, task_type))

    def get(self, split: str, index: int, task_type: str | None = None) -> GameRef:
        """The ``index``-th game (of ``task_type``), generated into the cache if missing."""
        _check_index(index, self.count(split, task_type), split)
        split = canonical_split(split)
        game = index if task_type is None else task_indices(split, task_type)[index]
        base = self.root / "generated" / GENERATOR_VERSION / split
        path = generated_game_path(split, game, base)
        return GameRef(path, split_task_types(split)[game], split, game)


class ALFWorldDataGames:
    """The original ALFWorld games found under ``root`` (default ``$ALFWORLD_DATA``).

    A game is a folder with ``game.tw-pddl`` and ``traj_data.json`` whose game file says
    ``solvable``; like ALFWorld's ``AlfredTWEnv``, folders of movable-receptacle and sliced tasks
    are skipped. Games are listed in sorted path order, so an index means the same game on every
    machine with the same data.
    """

    name = "alfworld_data"

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root).expanduser() if root is not None else alfworld_data_dir()
        self._games: dict[str, list[GameRef]] = {}

    def split_dir(self, split: str) -> Path:
        """Folder of a split: ``<root>/json_2.1.1/<dir>`` or ``<root>/<dir>``."""
        name = _DATA_SPLIT_DIRS[canonical_split(split)]
        nested = self.root / "json_2.1.1" / name
        return nested if nested.is_dir() else self.root / name

    def _list(self, split: str) -> list[GameRef]:
        if split not in self._games:
            base = self.split_dir(split)
            refs = []
            for folder, _, files in sorted(os.walk(base)):
                if "game.tw-pddl" not in files or "traj_data.json" not in files:
                    continue
                if "movable" in folder or "Sliced" in folder:
                    continue
                path = Path(folder) / "game.tw-pddl"
                task_type = json.loads((Path(folder) / "traj_data.json").read_text())["task_type"]
                if task_type in TASK_TYPES and json.loads(path.read_text()).get("solvable"):
                    refs.append(GameRef(path, task_type, split, len(refs)))
            if not refs:
                raise FileNotFoundError(
                    f"no ALFWorld games for split {split!r} under {base}: run alfworld-download "
                    "(or set ALFWORLD_DATA / data_dir to where the data is)"
                )
            self._games[split] = refs
        return self._games[split]

    def _filtered(self, split: str, task_type: str | None) -> list[GameRef]:
        games = self._list(_check(split, task_type))
        return games if task_type is None else [g for g in games if g.task_type == task_type]

    def count(self, split: str, task_type: str | None = None) -> int:
        """Number of games of ``split`` (of ``task_type`` only, if given)."""
        return len(self._filtered(split, task_type))

    def get(self, split: str, index: int, task_type: str | None = None) -> GameRef:
        """The ``index``-th game of ``split`` (of ``task_type``) in sorted path order."""
        games = self._filtered(split, task_type)
        _check_index(index, len(games), split)
        return games[index]


def make_source(
    name: str, *, data_dir: str | Path | None = None, cache_dir: str | Path | None = None
) -> GeneratedGames | ALFWorldDataGames:
    """Build the game source called ``name`` (``generated`` or ``alfworld_data``)."""
    if name == "generated":
        return GeneratedGames(Path(cache_dir) if cache_dir is not None else None)
    if name == "alfworld_data":
        return ALFWorldDataGames(Path(data_dir) if data_dir is not None else None)
    raise ValueError(f"unknown game source {name!r}; known: {', '.join(SOURCES)}")
