"""The two engines that play an ALFWorld game file: native (default) and TextWorld (reference).

Holds :data:`ENGINES`, :func:`make_engine`, :data:`TEXTWORLD_LOCK`, :class:`Engine` (the
interface both follow) and :class:`TextWorldEngine`; the native one is
:class:`arlarena_envs.alfworld.native.NativeEngine`.

TextWorld's PDDL environment parses with module-level Tatsu parsers and Fast Downward's
translator keeps module-level options and rewrites ``sys.argv``: none of it is safe from two
threads at once (six concurrent resets fail with ``IndexError('pop from empty list')``). Every
call into TextWorld or Fast Downward's Python code therefore holds :data:`TEXTWORLD_LOCK`; the
native engine shares nothing mutable between instances and needs no lock.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Protocol

from arlarena_envs.alfworld.native import NativeEngine, Turn
from arlarena_envs.alfworld.planner import Fact, keep_argv
from arlarena_envs.alfworld.translation import TEXTWORLD_LOCK, install_translation_cache

__all__ = ["ENGINES", "TEXTWORLD_LOCK", "Engine", "Fact", "TextWorldEngine", "make_engine"]

class Engine(Protocol):
    """What :class:`~arlarena_envs.alfworld.env.ALFWorldEnv` needs from an engine."""

    def load(self, path: str | Path) -> None:
        """Use the game file ``path`` for the next ``reset``."""
        ...

    def reset(self) -> Turn:
        """Start the game: the intro, the admissible commands (``help`` included), ``won``."""
        ...

    def step(self, command: str) -> Turn:
        """Run an admissible command."""
        ...

    def facts(self) -> list[Fact]:
        """TextWorld's propositions of the current state, sorted."""
        ...

    def display_facts(self) -> list[tuple[str, tuple[str, ...]]]:
        """The propositions with the names the player sees (what ALFWorld's expert reads)."""
        ...

    def operator_of(self, command: str) -> str | None:
        """Fast Downward's operator name (``action arg ...``) of an admissible command."""
        ...

    def command_of(self, operator: str) -> str | None:
        """The admissible command of an operator name, if there is one now."""
        ...

    def close(self) -> None:
        ...


def _operator_name(action: Any) -> str:
    return " ".join([action.name, *(v.name for v in action.mapping.values())])


class TextWorldEngine:
    """TextWorld's ``PddlEnv`` with ALFWorld's ``AlfredDemangler(shuffle=False)`` and
    ``AlfredInfos`` wrappers, as ``AlfredTWEnv`` plays a game (calls serialised by
    :data:`TEXTWORLD_LOCK`)."""

    def __init__(self) -> None:
        self._tw: Any = None
        self._loaded: str | None = None
        self._state: Any = None

    def load(self, path: str | Path) -> None:
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

        path = str(path)
        with TEXTWORLD_LOCK, keep_argv(), warnings.catch_warnings():
            install_translation_cache()
            # PddlEnv.load leaves its game file to the garbage collector, which warns.
            warnings.simplefilter("ignore", ResourceWarning)
            if self._tw is None:
                infos = textworld.EnvInfos(won=True, admissible_commands=True,
                                           extras=["gamefile"])
                wrappers = [AlfredDemangler(shuffle=False), AlfredInfos]
                self._tw = textworld.start(path, infos, wrappers=wrappers)
                self._loaded = path
            elif path != self._loaded:
                self._tw.load(path)
                self._loaded = path

    def reset(self) -> Turn:
        with TEXTWORLD_LOCK, keep_argv():
            self._state = self._require().reset()
        return self._turn()

    def step(self, command: str) -> Turn:
        with TEXTWORLD_LOCK, keep_argv():
            self._state, _, _ = self._require().step(command)
        return self._turn()

    def facts(self) -> list[Fact]:
        return sorted(
            (f.name, tuple((v.name, v.type) for v in f.arguments)) for f in self._facts())

    def display_facts(self) -> list[tuple[str, tuple[str, ...]]]:
        names = self._state["_entity_infos"]
        return [(pred, tuple(names[n].name for n, _ in args)) for pred, args in self.facts()]

    def operator_of(self, command: str) -> str | None:
        for action, cmd in self._actions():
            if cmd == command:
                return _operator_name(action)
        return None

    def command_of(self, operator: str) -> str | None:
        for action, cmd in self._actions():
            if _operator_name(action) == operator:
                return cmd
        return None

    def close(self) -> None:
        if self._tw is not None:
            with TEXTWORLD_LOCK:
                self._tw.close()
        self._tw, self._loaded, self._state = None, None, None

    def _require(self) -> Any:
        if self._tw is None:
            raise RuntimeError("load() a game first")
        return self._tw

    def _facts(self) -> list[Any]:
        if self._state is None:
            raise RuntimeError("call reset() first")
        return list(self._state["_facts"])

    def _actions(self) -> list[tuple[Any, str]]:
        if self._state is None:
            return []
        return list(zip(self._state["_valid_actions"], self._state["_valid_commands"],
                        strict=True))

    def _turn(self) -> Turn:
        state = self._state
        return Turn(state.feedback, tuple(state["admissible_commands"]), bool(state["won"]))


ENGINES: dict[str, type] = {"native": NativeEngine, "textworld": TextWorldEngine}
"""Engine name → class. ``native`` is the default of the env."""


def make_engine(name: str) -> Engine:
    """A new engine called ``name`` (``native`` or ``textworld``)."""
    if name not in ENGINES:
        raise ValueError(f"unknown ALFWorld engine {name!r}; known: {', '.join(ENGINES)}")
    return ENGINES[name]()
