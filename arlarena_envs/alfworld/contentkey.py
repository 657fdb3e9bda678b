"""What makes two ALFWorld games the same task: a hash of the scene, the layout and the goal.

Holds :func:`spec_key` (the key of a :class:`~arlarena_envs.alfworld.problem.GameSpec`),
:func:`content_key` (of game ``index`` of a split) and :func:`info_key` (of the game an env's
``info`` names, what a per-env registry of content keys calls after ``reset``).

A panel's file hash (:mod:`arlarena_envs.panels.content`) covers the game files byte for byte,
so it tells two games apart by the random offsets in their object ids alone. This key is
coarser on purpose: two games are the same task when they share the ALFRED scene (the floor
plan), the layout (which object types start in which receptacles, counted) and the goal
(task type, target object, parent receptacle, lamp). The sentence wording, the object ids'
coordinates and the agent's start are left out, so the key can only join more games than the
task itself would, never fewer: panels kept apart by it are kept apart by content.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from arlarena_envs.alfworld.generator import sample_game
from arlarena_envs.alfworld.problem import GameSpec
from arlarena_envs.alfworld.scenes import canonical_split

__all__ = ["KEY_CHARS", "content_key", "info_key", "spec_key"]

KEY_CHARS = 16
"""Hex digits of SHA-256 kept (as the panels' content hashes)."""


def spec_key(spec: GameSpec) -> str:
    """The content key of a generated game: its scene, layout and goal, hashed.

    >>> a = sample_game("train", 0)
    >>> spec_key(a) == spec_key(a) and len(spec_key(a)) == KEY_CHARS
    True
    """
    content = {
        "scene": spec.scene,
        "layout": sorted([o.type, o.receptacle] for o in spec.objects),
        "goal": [spec.task_type, spec.object_target, spec.parent_target, spec.toggle_target],
    }
    text = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:KEY_CHARS]


def content_key(split: str, index: int) -> str:
    """The content key of generated game ``index`` of ``split``."""
    return spec_key(sample_game(canonical_split(split), int(index)))


def info_key(info: dict[str, Any]) -> str:
    """The content key of the game an ALFWorld env's ``info`` names (after ``reset``).

    Only ARLArena's generated games have one: the original ALFWorld games
    (``source="alfworld_data"``) raise a ``ValueError``.
    """
    if info.get("source", "generated") != "generated":
        raise ValueError(f"no content key for ALFWorld games of source {info.get('source')!r}: "
                         "only generated games have one")
    return content_key(info["split"], info["game_index"])
