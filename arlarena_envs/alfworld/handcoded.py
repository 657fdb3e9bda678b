"""ALFWorld's own hand-coded expert (``HandCodedTWAgent``), played on an engine, reproducibly.

Holds :class:`HandcodedResult` and :func:`play_handcoded`. ALFWorld keeps a generated game only
if its expert solves it (``AlfredTWEnv.is_solvable``); ARLArena's generator does the same with
this function (see :mod:`arlarena_envs.alfworld.generator`). It plays the game the way
ALFWorld's ``AlfredExpert`` wrapper drives the expert: ``look`` first, then the expert's command
whenever it is admissible (``look`` otherwise), until the game is won or the expert gives up
(it raises after ``max_steps`` of its own, 200 in ``AlfredExpert``).

Three things differ from running ``AlfredExpert`` on TextWorld, none of them in the expert's
decisions:

* the expert draws with :mod:`random`; its module's ``random`` is swapped for a
  ``random.Random(seed)`` while it plays (under a lock), so a game's verdict is the same on
  every run and machine;
* the command it played is handed back with a leading ``move`` written ``put``: the expert was
  written for ALFWorld's older grammar and only notices an object put down when the command
  says ``put`` (with ``move`` it never empties its hands and stalls on two-object tasks);
* it is given the propositions it reads (``holds``, ``inreceptacle``, ``ishot``, ``iscool``,
  ``isclean`` and their ``not_``/``holdsany`` relatives), sorted, instead of all of them in
  TextWorld's hash order; the native engine (the default here) gives exactly TextWorld's.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from arlarena_envs.alfworld.engines import make_engine

__all__ = ["MAX_EXPERT_STEPS", "HandcodedResult", "play_handcoded"]

MAX_EXPERT_STEPS = 200
"""The expert's own step budget in ALFWorld's ``AlfredExpert`` wrapper."""

_READ = ("holds", "inreceptacle", "ishot", "iscool", "isclean")
_RANDOM_LOCK = threading.Lock()


class _Fact(NamedTuple):
    """A proposition as the expert reads it (``fact.name``, ``fact.names``)."""

    name: str
    names: tuple[str, ...]


@dataclass
class HandcodedResult:
    """Whether the expert won, how many commands it played and which, and why it stopped."""

    won: bool
    steps: int
    commands: list[str] = field(default_factory=list)
    stopped: str = ""


def play_handcoded(
    path: str | Path, seed: int, *, engine: str = "native", max_steps: int = MAX_EXPERT_STEPS
) -> HandcodedResult:
    """Let ALFWorld's hand-coded expert play the game file ``path`` (``traj_data.json`` beside
    it says the task) with its random draws seeded by ``seed``."""
    from alfworld.agents.expert import handcoded_expert
    from alfworld.agents.expert.handcoded_expert_tw import HandCodedTWAgent

    game = make_engine(engine)
    game.load(path)
    result = HandcodedResult(won=False, steps=0)
    with _RANDOM_LOCK:
        saved = handcoded_expert.random
        handcoded_expert.random = random.Random(seed)
        try:
            agent = HandCodedTWAgent(max_steps=max_steps)
            turn = game.reset()
            agent.reset(str(path))
            agent.observe(turn.feedback)
            command = "look"
            while not turn.won and result.steps <= max_steps:
                turn = game.step(command)
                result.commands.append(command)
                result.steps += 1
                if turn.won:
                    break
                state = {
                    "feedback": turn.feedback,
                    "admissible_commands": list(turn.admissible_commands),
                    "won": turn.won,
                    "facts": [_Fact(pred, names) for pred, names in game.display_facts()
                              if any(word in pred for word in _READ)],
                }
                played = "put" + command[4:] if command.startswith("move ") else command
                proposal = agent.act(state, 0, turn.won, played)
                command = proposal if proposal in state["admissible_commands"] else "look"
        except Exception as exc:  # the expert gives up by raising (timeout, no subgoal left)
            result.stopped = type(exc).__name__
        finally:
            handcoded_expert.random = saved
            game.close()
    result.won = bool(turn.won) if not result.stopped else False
    if not result.stopped and not result.won:
        result.stopped = "step limit"
    return result
