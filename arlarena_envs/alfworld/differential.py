"""The differential test of the native engine: play a game on both engines, compare every step.

Holds :func:`turn_digest`, :class:`Comparison`, :func:`compare_engines` (one game on TextWorld
and on the native engine side by side: a seeded run of random admissible commands, then
ALFWorld's planner expert to the win) and :func:`replay_digest` (a recorded command sequence
on one engine, digested as :func:`compare_engines` digests TextWorld's run). ``bench/alfworld.py``
records TextWorld's runs with these; ``tests/test_alfworld_native.py`` replays them natively.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arlarena_envs.alfworld.engines import Engine, make_engine
from arlarena_envs.alfworld.native import Turn
from arlarena_envs.alfworld.planner import RelevantPlanner

__all__ = ["Comparison", "compare_engines", "replay_digest", "turn_digest"]

WIN_SCORE = 1.0
"""TextWorld's score on the winning step (the env's reward is ten times it)."""


def turn_digest(turn: Turn) -> bytes:
    """SHA-256 of what a step shows: observation, admissible commands, reward, done, won."""
    reward = WIN_SCORE if turn.won else 0.0
    record = [turn.feedback, list(turn.admissible_commands), reward, turn.won, turn.won]
    return hashlib.sha256(json.dumps(record).encode("utf-8")).digest()


@dataclass
class Comparison:
    """One game played on both engines: the command indices chosen (into TextWorld's sorted
    admissible list), the digest of TextWorld's turns, and the first mismatch if any."""

    choices: list[int] = field(default_factory=list)
    digest: str = ""
    won: bool = False
    random_steps: int = 0
    mismatch: dict[str, Any] | None = None


def _chain(turns: list[Turn]) -> str:
    chain = hashlib.sha256()
    for turn in turns:
        chain.update(turn_digest(turn))
    return chain.hexdigest()[:16]


def compare_engines(
    path: str | Path,
    key: str,
    max_random_steps: int = 15,
    max_steps: int = 60,
    engines: dict[str, Engine] | None = None,
) -> Comparison:
    """Play ``path`` on TextWorld and natively: ``0..max_random_steps`` random admissible
    commands (``help`` included; the count and the draws seeded by ``key``), then the planner
    expert's plan; every turn and the proposition lists compared. ``engines`` (``textworld``
    and ``native``) may be reused from game to game; by default new ones are made and closed."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    planner = RelevantPlanner(data["pddl_domain"], data["pddl_problem"])
    own = engines is None
    if engines is None:
        engines = {name: make_engine(name) for name in ("textworld", "native")}
    try:
        turns = {}
        for name, engine in engines.items():
            engine.load(path)
            turns[name] = engine.reset()
        rng = random.Random(key)
        result = Comparison(random_steps=rng.randrange(max_random_steps + 1))
        recorded: list[Turn] = []
        plan: list[str] = []
        for step in range(max_steps + 1):
            tw, native = turns["textworld"], turns["native"]
            facts = engines["textworld"].facts()
            if tw != native or facts != engines["native"].facts():
                result.mismatch = {"step": step, "textworld": tw, "native": native,
                                   "facts_equal": facts == engines["native"].facts()}
                break
            recorded.append(tw)
            if tw.won or step == max_steps:
                break
            if step < result.random_steps:
                command = rng.choice(tw.admissible_commands)
            else:
                plan = plan or planner.plan(facts) or []
                command = engines["textworld"].command_of(plan.pop(0)) if plan else None
                if command is None:
                    break
            result.choices.append(tw.admissible_commands.index(command))
            for name, engine in engines.items():
                turns[name] = engine.step(command)
        result.won = recorded[-1].won if recorded else False
        result.digest = _chain(recorded)
        return result
    finally:
        if own:
            for engine in engines.values():
                engine.close()


def replay_digest(engine_name: str, path: str | Path, choices: list[int]) -> tuple[str, list[Turn]]:
    """Replay recorded command indices on one engine: the digest :func:`compare_engines` gives
    for the same run, and the turns (an index past the admissible list stops the replay)."""
    engine = make_engine(engine_name)
    try:
        engine.load(path)
        turns = [engine.reset()]
        for choice in choices:
            commands = turns[-1].admissible_commands
            if choice >= len(commands):
                break
            turns.append(engine.step(commands[choice]))
        return _chain(turns), turns
    finally:
        engine.close()
