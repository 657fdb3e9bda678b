"""ALFWorld's planner (Fast Downward, as TextWorld runs it) made fast enough to be an expert.

Holds :class:`RelevantPlanner`. TextWorld's ``policy_commands`` re-run Fast Downward's blind
(uniform-cost) search on the whole game at every step: in a kitchen with twenty closed cabinets
and drawers that takes seconds per call, because every combination of opened receptacles is a
distinct state. The goal of an ALFWorld game only ever involves the objects of its target types,
the receptacles of its parent type, the appliance of clean/heat/cool tasks and the lamp; every
other receptacle can only add steps. So the planner writes the *current* state of the game
restricted to those (plus the agent's location and, if the agent holds something else, the
places it may be put down) as a PDDL problem with the game's own domain and goal, and solves it
with the same Fast Downward library and search. Plans are optimal for the game (same action
costs, nothing relevant left out) and take milliseconds instead of seconds.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from arlarena_envs.alfworld.pddl import parse_domain
from arlarena_envs.alfworld.translation import TEXTWORLD_LOCK

__all__ = ["Fact", "RelevantPlanner", "keep_argv"]

Fact = tuple[str, tuple[tuple[str, str], ...]]
"""(predicate, ((object name, type), ...)), as the engines list them."""

# Goal predicate → the receptacle type (lower-case PDDL constant) the task needs.
_APPLIANCE_OF = {"isclean": "sinkbasintype", "ishot": "microwavetype", "iscool": "fridgetype"}


@contextmanager
def keep_argv() -> Iterator[None]:
    """Restore ``sys.argv`` afterwards: Fast Downward's translator overwrites it."""
    saved = list(sys.argv)
    try:
        yield
    finally:
        sys.argv[:] = saved


def _goal_text(problem: str) -> str:
    start = problem.find("(:goal")
    if start < 0:
        raise ValueError("the game's PDDL problem has no (:goal ...)")
    return problem[start:]


class RelevantPlanner:
    """Optimal plans for one ALFWorld game from its current facts.

    Args:
        domain: the game's PDDL domain text.
        problem: the game's PDDL problem text (its goal and type constants are reused).
    """

    def __init__(self, domain: str, problem: str) -> None:
        self.domain = domain
        self.goal = _goal_text(problem)
        lowered = self.goal.lower()
        self.object_types = set(re.findall(r"\(objecttype \?\w+ (\w+)\)", lowered))
        self.receptacle_types = set(re.findall(r"\(receptacletype \?\w+ (\w+)\)", lowered))
        self.receptacle_types |= {
            rtype for pred, rtype in _APPLIANCE_OF.items() if f"({pred} ?" in lowered
        }
        self.constants = sorted(
            (name.lower(), kind)
            for name, kind in re.findall(r"^\s*(\S+) - (otype|rtype)\b", problem, re.MULTILINE)
        )
        self.predicates = frozenset(parse_domain(domain).predicates)

    def _relevant(self, facts: list[Fact]) -> set[str]:
        by_name: dict[str, list[tuple[str, ...]]] = {}
        for pred, args in facts:
            by_name.setdefault(pred, []).append(tuple(name for name, _ in args))

        def pairs(name: str) -> Iterable[tuple[str, str]]:
            return ((args[0], args[1]) for args in by_name.get(name, ()))

        objects = {o for o, t in pairs("objecttype") if t in self.object_types}
        held = {o for _, o in pairs("holds")}
        objects |= held
        rtype_of = dict(pairs("receptacletype"))
        otype_of = dict(pairs("objecttype"))
        wanted_rtypes = set(self.receptacle_types)
        for obj in held - {o for o, t in otype_of.items() if t in self.object_types}:
            wanted_rtypes |= {rt for rt, ot in pairs("cancontain") if ot == otype_of.get(obj)}
        receptacles = {r for r, t in rtype_of.items() if t in wanted_rtypes}
        receptacles |= {r for o, r in pairs("inreceptacle") if o in objects}
        locations = {loc for r, loc in pairs("receptacleatlocation") if r in receptacles}
        locations |= {loc for _, loc in pairs("atlocation")}
        return objects | receptacles | locations

    def problem(self, facts: list[Fact]) -> str:
        """The PDDL problem of the current facts (an engine's :meth:`facts`, in their sorted
        order, so both engines give Fast Downward the same text), restricted to what the goal
        involves; ``not_`` propositions and anything the domain does not declare are left out."""
        constants = dict(self.constants)
        keep = self._relevant(facts)
        declared: dict[str, str] = {}
        kept_facts = []
        for pred, args in facts:
            if pred not in self.predicates:
                continue
            if all(n in keep or n in constants or t == "agent" for n, t in args):
                kept_facts.append(f"({pred} {' '.join(n for n, _ in args)})")
                declared.update((n, t) for n, t in args if n not in constants)
        objects = [f"{n} - {t}" for n, t in sorted(declared.items())]
        objects += [f"{n} - {t}" for n, t in self.constants]
        return (
            "(define (problem arlarena_expert)\n(:domain alfred)\n(:objects\n  "
            + "\n  ".join(objects) + "\n)\n(:init\n  " + "\n  ".join(kept_facts) + "\n)\n"
            + self.goal
        )

    def plan(self, facts: list[Fact]) -> list[str] | None:
        """Fast Downward's operator names of an optimal plan, ``[]`` if the goal holds, else
        ``None`` when no plan exists. (The whole game is never searched as a fallback: its blind
        search can run for minutes in a kitchen.)"""
        return self._solve(self.problem(facts))

    def _solve(self, problem: str) -> list[str] | None:
        import fast_downward
        from fast_downward.interface import pddl2sas  # not the memoised one: these are one-offs

        with TEXTWORLD_LOCK, keep_argv():
            _, sas = pddl2sas(self.domain, problem, optimize=True)
        with _LIB_LOCK:  # one library, one search at a time
            lib = _downward_lib()
            lib.load_sas(sas.encode("utf-8"))
            if lib.check_goal():
                return []
            if not lib.solve(False):
                return None
            operators = (fast_downward.Operator * lib.get_last_plan_length())()
            lib.get_last_plan(operators)
        return [op.name for op in operators]


_LIB: Any = None
_LIB_LOCK = threading.Lock()


def _downward_lib() -> Any:
    """Fast Downward's library, loaded once per process (under ``_LIB_LOCK``).

    ``fast_downward.load_lib`` maps a fresh copy of the ~28 MB library each call and never
    unloads it; the copy's file is deleted but its disk space stays held while it is mapped.
    A library per planner (one per game) held a copy per game played: the 1,600 expert
    episodes of ``make learn-alfworld``'s behaviour cloning filled the disk (~45 GB).
    """
    global _LIB
    if _LIB is None:
        import fast_downward

        _LIB = fast_downward.load_lib()
    return _LIB
