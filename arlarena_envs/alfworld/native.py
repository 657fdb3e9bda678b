"""The native ALFWorld engine: TextWorld's transcripts of a ``game.tw-pddl``, without TextWorld.

Holds :func:`display_names` (ALFWorld's ``Demangler`` with ``shuffle=False``), :class:`NativeGame`
(a game file compiled once: its PDDL task, grammar and entities; read-only, shared by the
engines of a process through :func:`load_game`) and :class:`NativeEngine` (one episode's state).

What TextWorld computes with Fast Downward and Tatsu on every step, the engine computes from
:mod:`arlarena_envs.alfworld.logic` (the same PDDL domain, Fast Downward's operator semantics)
and :mod:`arlarena_envs.alfworld.textgen` (the same grammar, parsed once). It keeps two fact
sets, as TextWorld does: the planning state (conditions of effects evaluated) for the
admissible commands and the goal, and TextWorld's proposition list (every effect atom applied,
``not_`` facts included) that the grammar and ALFWorld's hand-coded expert read. Command texts
whose template reads only static facts are derived once per operator.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from arlarena_envs.alfworld.logic import FactStore, Ground, Task
from arlarena_envs.alfworld.pddl import parse_domain, parse_problem
from arlarena_envs.alfworld.textgen import (
    Entity,
    Grammar,
    derive,
    parse_grammar,
    parse_symbols,
)

__all__ = ["NativeEngine", "NativeGame", "Turn", "display_names", "load_game"]

_INTRO = parse_symbols("#intro#")
_DEMANGLE = (("_bar_", "|"), ("_minus_", "-"), ("_plus_", "+"), ("_dot_", "."), ("_comma_", ","))


@dataclass(frozen=True)
class Turn:
    """What the game says after a reset or a step (TextWorld's state, the parts ALFWorld uses)."""

    feedback: str
    admissible_commands: tuple[str, ...]
    won: bool


def display_names(ids: Sequence[str]) -> dict[str, str]:
    """ALFWorld's ``Demangler`` names (``shuffle=False``): ``cabinet_bar_...`` → ``cabinet 3``.

    Instances of a name are numbered in sorted-id order from the highest number down; a name
    with ``basin`` in its id gets ``basin`` appended; ids without ``_bar_`` keep their text and
    a trailing space, as ALFWorld's format string leaves them.
    """
    ordered = sorted(ids)
    counts: Counter[str] = Counter()
    for name in ordered:
        head, sep, _ = name.partition("_bar_")
        if sep:
            counts[head + ("basin" if "basin" in name else "")] += 1
    numbers = {name: list(range(1, count + 1)) for name, count in counts.items()}
    out = {}
    for name in ordered:
        text = name
        for mangled, char in _DEMANGLE:
            text = text.replace(mangled, char)
        head, sep, _ = text.partition("|")
        if not sep:
            out[name] = f"{text} "
        else:
            head += "basin" if "basin" in name else ""
            out[name] = f"{head} {numbers[head].pop()}"
    return out


class NativeGame:
    """A game file compiled for the native engine (immutable once built).

    Args:
        data: the parsed ``game.tw-pddl`` (``pddl_domain``, ``pddl_problem``, ``grammar``).
    """

    def __init__(self, data: dict) -> None:
        self.task = Task(parse_domain(data["pddl_domain"]), parse_problem(data["pddl_problem"]))
        self.grammar: Grammar = parse_grammar(data["grammar"])
        task = self.task
        missing = [s.name for s in task.schemas if s.name not in self.grammar.actions]
        if missing:
            raise ValueError(f"the grammar has no template for the action(s) {missing}")
        used = sorted({i for facts in task.initial_sets.values() for args in facts for i in args})
        names = display_names([task.names[i] for i in used])
        self.entities: tuple[Entity, ...] = tuple(
            Entity(id=name, type=task.types[i], name=names.get(name, name))
            for i, name in enumerate(task.names)
        )
        self.id_names = {e.id: e.name for e in self.entities}
        self.static_sorted = {
            pred: tuple(sorted(facts)) for pred, facts in task.initial_sets.items()
            if pred in task.static
        }
        self.static_by_position = {
            pred: _by_position(facts) for pred, facts in self.static_sorted.items()
        }
        self.command_keys = tuple(self._command_key(s) for s in task.schemas)
        self.templates = tuple(self.grammar.actions[s.name][0] for s in task.schemas)
        self.feedbacks = tuple(self.grammar.actions[s.name][1] for s in task.schemas)
        self.allowed = task.allowed

    def _command_key(self, schema) -> tuple[int, ...] | None:
        """The parameter positions a command text depends on, if it reads only static facts
        (``None``: derive it on every turn)."""
        reads = self.grammar.reads(self.grammar.actions[schema.name][0])
        fluent = self.task.fluent
        if reads.predicates & (fluent | {f"not_{p}" for p in fluent}):
            return None
        params = schema.parameters
        if not reads.placeholders <= set(params):  # new placeholders: any value may matter
            return tuple(range(len(params)))
        names = reads.variables | {name for name, _ in reads.placeholders}
        return tuple(i for i, (name, _) in enumerate(params) if name in names)


def _by_position(
    facts: Sequence[tuple[int, ...]],
) -> list[dict[int, tuple[tuple[int, ...], ...]]]:
    """Per argument position: value → the (sorted) facts with that value there."""
    width = max((len(args) for args in facts), default=0)
    groups: list[dict[int, list[tuple[int, ...]]]] = [{} for _ in range(width)]
    for args in sorted(facts):
        for position, value in enumerate(args):
            groups[position].setdefault(value, []).append(args)
    return [{v: tuple(f) for v, f in group.items()} for group in groups]


_GAMES: OrderedDict[str, NativeGame] = OrderedDict()
_GAMES_LOCK = threading.Lock()


def load_game(path: str | Path, max_cached: int = 16) -> NativeGame:
    """The compiled game of ``path``, from a small per-process cache keyed by file content."""
    raw = Path(path).read_bytes()
    key = hashlib.sha256(raw).hexdigest()
    with _GAMES_LOCK:
        if key in _GAMES:
            _GAMES.move_to_end(key)
            return _GAMES[key]
    game = NativeGame(json.loads(raw))
    with _GAMES_LOCK:
        _GAMES[key] = game
        while len(_GAMES) > max_cached:
            _GAMES.popitem(last=False)
    return game


class _Propositions:
    """TextWorld's proposition list of one episode: static facts shared, the rest private."""

    def __init__(self, game: NativeGame) -> None:
        self.game = game
        self.sets: dict[str, set[tuple[int, ...]]] = {
            pred: set(facts) for pred, facts in game.task.initial_sets.items()
            if pred not in game.task.static
        }
        self._sorted: dict[str, tuple[tuple[int, ...], ...]] = {}
        self._by_position: dict[str, list[dict[int, tuple[tuple[int, ...], ...]]]] = {}

    def sorted_facts(self, predicate: str) -> Sequence[tuple[int, ...]]:
        static = self.game.static_sorted.get(predicate)
        if static is not None:
            return static
        cached = self._sorted.get(predicate)
        if cached is None:
            cached = self._sorted[predicate] = tuple(sorted(self.sets.get(predicate, ())))
        return cached

    def facts_with(self, predicate: str, position: int, value: int) -> Sequence[tuple[int, ...]]:
        groups = self.game.static_by_position.get(predicate)
        if groups is None:
            groups = self._by_position.get(predicate)
            if groups is None:
                groups = self._by_position[predicate] = _by_position(
                    self.sets.get(predicate, ()))
        return groups[position].get(value, ()) if position < len(groups) else ()

    def allowed(self, type_: str) -> frozenset[int] | None:
        return self.game.allowed(type_)

    def set(self, predicate: str, args: tuple[int, ...], value: bool) -> None:
        """Apply one effect atom the way TextWorld's ``PddlState.apply`` does."""
        keep, drop = (predicate, f"not_{predicate}") if value else (f"not_{predicate}", predicate)
        self.sets.setdefault(keep, set()).add(args)
        self.sets.get(drop, set()).discard(args)
        for cache in (self._sorted, self._by_position):
            cache.pop(keep, None)
            cache.pop(drop, None)

    def all(self) -> list[tuple[str, tuple[int, ...]]]:
        facts = [(p, a) for p, facts in self.game.static_sorted.items() for a in facts]
        facts += [(p, a) for p, args in self.sets.items() for a in args]
        return sorted(facts)


class NativeEngine:
    """One ALFWorld episode on a compiled game: ``reset`` and ``step`` give TextWorld's turns.

    Not shared between threads: each env owns its engine (the compiled game it reads is
    immutable).
    """

    def __init__(self) -> None:
        self.game: NativeGame | None = None
        self.path: Path | None = None
        self._store: FactStore | None = None
        self._props: _Propositions | None = None
        self._commands: dict[str, Ground] = {}
        self._effects: dict[tuple, tuple] = {}
        self._command_memo: dict[tuple, str] = {}

    def load(self, path: str | Path) -> None:
        """Use the game file ``path`` (compiled once per process)."""
        path = Path(path)
        if path != self.path or self.game is None:
            self.game, self.path = load_game(path), path
            self._effects, self._command_memo = {}, {}
        self._store = None

    def reset(self) -> Turn:
        game = self._require()
        self._store = game.task.initial_store()
        self._props = _Propositions(game)
        feedback = derive(game.grammar, _INTRO, self._props, game.entities, {})
        return self._turn(feedback)

    def step(self, command: str) -> Turn:
        """Run an admissible command (anything else is a ``ValueError``: callers check first)."""
        game = self._require()
        if self._store is None or self._props is None:
            raise RuntimeError("call reset() before step()")
        ground = self._commands.get(command.strip())
        if ground is None:
            raise ValueError(f"not an admissible command: {command!r}")
        for (pred, args), value in game.task.ground_effects(ground, self._reported(ground)):
            self._props.set(pred, args, value)
        adds, dels = game.task.fired_effects(self._store, ground)
        for pred, args in dels:
            self._store.remove(pred, args)
        for pred, args in adds:
            self._store.add(pred, args)
        feedback = derive(game.grammar, game.feedbacks[ground[0]], self._props, game.entities,
                          self._mapping(ground))
        return self._turn(feedback)

    # -- what the expert and the tests read ------------------------------------------------
    def facts(self) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
        """TextWorld's propositions (``not_`` ones included), sorted, as (predicate,
        ((name, type), ...))."""
        game, props = self._require(), self._props
        if props is None:
            raise RuntimeError("call reset() first")
        entities = game.entities
        return [(p, tuple((entities[i].id, entities[i].type) for i in a)) for p, a in props.all()]

    def display_facts(self) -> list[tuple[str, tuple[str, ...]]]:
        """The same propositions with ALFWorld's display names (what its expert reads)."""
        game, props = self._require(), self._props
        if props is None:
            raise RuntimeError("call reset() first")
        return [(p, tuple(game.entities[i].name for i in a)) for p, a in props.all()]

    def operator_of(self, command: str) -> str | None:
        """Fast Downward's operator name (action and parameters) behind an admissible command."""
        ground = self._commands.get(command)
        if ground is None:
            return None
        game = self._require()
        names = [game.task.names[i] for i in ground[1]]
        return " ".join([game.task.schemas[ground[0]].name, *names])

    def command_of(self, operator: str) -> str | None:
        """The admissible command of an operator name, if it is applicable now."""
        for command in self._commands:
            if self.operator_of(command) == operator:
                return command
        return None

    def close(self) -> None:
        self.game, self.path, self._store, self._props = None, None, None, None

    # -- internals ---------------------------------------------------------------------------
    def _require(self) -> NativeGame:
        if self.game is None:
            raise RuntimeError("load() a game first")
        return self.game

    def _mapping(self, ground: Ground) -> dict[tuple[str, str], int]:
        schema = self._require().task.schemas[ground[0]]
        return dict(zip(schema.parameters, ground[1], strict=True))

    def _reported(self, ground: Ground) -> tuple[tuple[int, bool], ...]:
        task = self._require().task
        key = task.effect_key(ground)
        effects = self._effects.get(key)
        if effects is None:
            effects = self._effects[key] = task.symbolic_effects(ground)
        return effects

    def _command(self, ground: Ground) -> str:
        game = self._require()
        positions = game.command_keys[ground[0]]
        if positions is not None:
            key = (ground[0], *(ground[1][i] for i in positions))
            text = self._command_memo.get(key)
            if text is not None:
                return text
        assert self._props is not None
        text = derive(game.grammar, game.templates[ground[0]], self._props, game.entities,
                      self._mapping(ground))
        text = text.format_map(game.id_names)
        if positions is not None:
            self._command_memo[key] = text
        return text

    def _turn(self, feedback: str) -> Turn:
        game = self._require()
        assert self._store is not None
        commands: dict[str, Ground] = {}
        always = game.task.always_changes
        for ground in game.task.candidates(self._store):
            if always[ground[0]][ground[2]] or self._reported(ground):
                commands.setdefault(self._command(ground), ground)
        self._commands = commands
        return Turn(feedback, tuple(sorted(commands)), game.task.goal_holds(self._store))
