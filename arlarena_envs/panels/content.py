"""What a task generates, as a content hash: the thing a task panel pins down.

Holds :func:`task_content` (reset an env on a task, return its id and what it generated:
Sokoban's level grid, WebShop's goal, ALFWorld's game files, TIR Math's problem and answer),
:data:`CONTENT` (the per-env-family extractors), :func:`task_hash` and :func:`digest`.

Only what decides the task enters the hash, never paths or timings, so the same task hashes
alike on every machine; a change of a generator or of a dependency (a new ALFWorld grammar, a
new reasoning-gym) changes it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym

__all__ = ["CONTENT", "digest", "task_content", "task_hash"]

HASH_CHARS = 16
"""Hex digits kept of a SHA-256 (64 bits: no collision among any panels' tasks)."""


def digest(data: Any) -> str:
    """The first :data:`HASH_CHARS` hex digits of the SHA-256 of ``data`` as canonical JSON."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


def _file_digest(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


Extractor = Callable[[gym.Env, str, dict[str, Any]], tuple[str, dict[str, Any]]]


def _sokoban(env: gym.Env, obs: str, info: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "", {"grid": obs}


def _webshop(env: gym.Env, obs: str, info: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    goal = dict(env.unwrapped._goal)  # the session's goal: target product, attributes, options
    return str(goal.get("asin", "")), {"goal": goal}


def _alfworld(env: gym.Env, obs: str, info: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    game = Path(info["gamefile"])
    files = {p.name: _file_digest(p) for p in (game, game.with_name("traj_data.json"))
             if p.is_file()}
    return f"{info.get('split')}/{info.get('game_index')}", {
        "task": info.get("task"), "observation": obs, "files": files,
    }


def _tir_math(env: gym.Env, obs: str, info: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return f"{info.get('dataset')}/{info.get('task_index')}", {
        "problem": info.get("task"), "answer": info.get("reference"),
    }


def _default(env: gym.Env, obs: str, info: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "", {"observation": obs, "task": info.get("task")}


CONTENT: dict[str, Extractor] = {
    "sokoban": _sokoban,
    "webshop": _webshop,
    "alfworld": _alfworld,
    "tir_math": _tir_math,
}
"""env family (the ``arlarena_envs`` sub-package of its entry point) → what identifies a task
after ``reset``: ``(task id, content)``; other envs hash the first observation and the task."""


def task_content(
    env: gym.Env, family: str, seed: int, options: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """Reset ``env`` on ``(seed, options)``; the task's id and what it generated."""
    obs, info = env.reset(seed=seed, options=dict(options) or None)
    return CONTENT.get(family, _default)(env, obs, info)


def task_hash(content: dict[str, Any]) -> str:
    """The content hash of one task."""
    return digest(content)
