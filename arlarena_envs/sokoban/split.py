"""Sokoban's held-out levels: a split of level space by the hash of a level's content.

Levels are generated from seeds and any seed can be trained on, so a held-out set of seeds
would share levels with training. Instead a level is held out iff the hash of its content (the
room's walls, targets and boxes: the player's start does not count, so levels that differ only
in it fall on the same side) lands in one of :data:`HELDOUT_PARTS` equal parts. Split
``"train"`` redraws every held-out level, ``"eval"`` every other one, and ``"all"`` (the env's
default, the study's levels) keeps whatever the seed generates. Training on ``train`` and
evaluating on ``eval`` therefore share no level, whatever the seeds.
"""

from __future__ import annotations

import hashlib

from arlarena_envs.sokoban.levels import Level

__all__ = ["HELDOUT_PARTS", "SPLITS", "in_split", "is_heldout", "level_key"]

HELDOUT_PARTS = 4
"""One level in this many is held out. 6x6 one-box rooms number in the low thousands, so the
held-out part repeats levels: seeds 1,000,000 .. 1,000,255 give 238 distinct held-out grids
with a quarter (207 with an eighth; 254 from all levels)."""

SPLITS: tuple[str, ...] = ("all", "train", "eval")
"""The level splits ``reset(options={"split": ...})`` takes."""


def level_key(level: Level) -> str:
    """The content of a level that decides whether it is held out: its shape, walls, targets
    and boxes (not the player's start)."""
    walls = "".join("#" if wall else "." for wall in level.walls.ravel().tolist())
    return f"{level.shape}|{walls}|{sorted(level.targets)}|{sorted(level.boxes)}"


def is_heldout(level: Level) -> bool:
    """Whether ``level`` belongs to the held-out part of level space."""
    digest = hashlib.sha256(level_key(level).encode("ascii")).digest()
    return int.from_bytes(digest[:8], "big") % HELDOUT_PARTS == 0


def in_split(level: Level, split: str) -> bool:
    """Whether split ``split`` may show ``level``."""
    if split == "all":
        return True
    return is_heldout(level) == (split == "eval")
