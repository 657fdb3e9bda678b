"""PDDL semantics for the native ALFWorld engine, exactly as Fast Downward hands them to TextWorld.

Holds :class:`FactStore` (facts as int tuples, indexed for joins), :class:`Task` (a domain and
problem compiled once: entities, static facts, action schemas as join plans, the goal) and its
pieces :class:`Literal`, :class:`Conjunct`, :class:`Effect`, :class:`CompiledSchema`.

Semantics are standard PDDL (preconditions may bind a parameter to the same object twice, as
in Fast Downward), plus what Fast Downward's translation (TextWorld's ``pddl2sas`` without
optimisation) does to the operators TextWorld sees:

* an operator whose effects are all no-ops given its precondition is dropped (so ``go to`` the
  receptacle the agent is at is not admissible);
* :meth:`Task.reported_effects` lists an operator's effect atoms the way the translated
  operator holds them (adds in order, a delete beside the add of the same atom, no-ops
  removed), because TextWorld applies *all* of them to its fact list whatever their
  conditions say; :meth:`Task.fired_effects` gives what really happens (conditions evaluated
  on the state before), which is what the planning state and the goal see.

Fast Downward also drops a delete, or an effect condition, on an atom its reachability analysis
rules out (TextWorld never shows ``not_ishot`` for a pan, which nothing can heat):
:meth:`Task.reachable` answers that from the static facts.

Conditions are put in disjunctive normal form (existential variables become extra slots); each
disjunct is compiled into a join plan ordered by the problem's fact counts.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from arlarena_envs.alfworld.pddl import (
    ROOT_TYPE,
    And,
    Atom,
    Domain,
    Equals,
    Exists,
    Formula,
    Not,
    Or,
    PddlError,
    Problem,
    When,
)

__all__ = [
    "CompiledSchema",
    "Conjunct",
    "Effect",
    "FactStore",
    "Ground",
    "Literal",
    "Task",
]

Args = tuple[int, ...]
GroundAtom = tuple[str, Args]
Ground = tuple[int, Args, int, Args]
"""An applicable operator: (schema index, parameter values, disjunct index, all slot values)."""


@dataclass(frozen=True)
class Literal:
    """``(predicate terms)`` or its negation; a term is a slot (``>= 0``) or a constant ``~id``."""

    predicate: str
    terms: tuple[int, ...]
    positive: bool


@dataclass(frozen=True)
class Conjunct:
    """One disjunct of a condition: literals, (in)equalities and the types of its slots."""

    literals: tuple[Literal, ...]
    equalities: tuple[tuple[int, int, bool], ...]
    slot_types: tuple[str, ...]


@dataclass(frozen=True)
class Effect:
    """One effect atom (``negated`` for a delete), under a conjunction of literal conditions."""

    conditions: tuple[Literal, ...]
    predicate: str
    terms: tuple[int, ...]
    negated: bool


@dataclass(frozen=True)
class CompiledSchema:
    """An action schema: its name, parameters, precondition disjuncts and flattened effects."""

    name: str
    parameters: tuple[tuple[str, str], ...]
    disjuncts: tuple[Conjunct, ...]
    effects: tuple[Effect, ...]


class FactStore:
    """Ground facts per predicate as int tuples, with the hash indexes the join plans read."""

    __slots__ = ("indexes", "sets")

    def __init__(self, index_specs: dict[str, list[tuple[int, ...]]]) -> None:
        self.sets: dict[str, dict[Args, None]] = {}
        self.indexes: dict[str, list[tuple[tuple[int, ...], dict[Args, dict[Args, None]]]]] = {
            pred: [(positions, {}) for positions in specs] for pred, specs in index_specs.items()
        }

    def add(self, pred: str, args: Args) -> None:
        facts = self.sets.setdefault(pred, {})
        if args in facts:
            return
        facts[args] = None
        for positions, index in self.indexes.get(pred, ()):
            index.setdefault(tuple(args[p] for p in positions), {})[args] = None

    def remove(self, pred: str, args: Args) -> None:
        facts = self.sets.get(pred)
        if facts is None or args not in facts:
            return
        del facts[args]
        for positions, index in self.indexes.get(pred, ()):
            key = tuple(args[p] for p in positions)
            bucket = index[key]
            del bucket[args]
            if not bucket:
                del index[key]

    def holds(self, pred: str, args: Args) -> bool:
        facts = self.sets.get(pred)
        return facts is not None and args in facts

    def bucket(self, pred: str, slot: int, key: Args) -> dict[Args, None]:
        """Facts of ``pred`` whose indexed positions (index number ``slot``) equal ``key``."""
        return self.indexes[pred][slot][1].get(key, _EMPTY)


_EMPTY: dict[Args, None] = {}


# -- conditions → disjunctive normal form --------------------------------------------------------
class _Slots:
    """Variable names → slot numbers of one schema (parameters first, then existentials)."""

    def __init__(self, parameters: Iterable[tuple[str, str]]) -> None:
        self.names: list[str] = []
        self.types: list[str] = []
        self.scope: dict[str, int] = {}
        for name, type_ in parameters:
            self.scope[name] = self.new(name, type_)

    def new(self, name: str, type_: str) -> int:
        self.names.append(name)
        self.types.append(type_)
        return len(self.names) - 1


def _term(name: str, scope: dict[str, int]) -> int | str:
    if name.startswith("?"):
        if name not in scope:
            raise PddlError(f"unbound variable {name}")
        return scope[name]
    return name


def _dnf(formula: Formula, slots: _Slots, scope: dict[str, int], positive: bool) -> list[list]:
    if isinstance(formula, Atom):
        terms = tuple(_term(t, scope) for t in formula.terms)
        return [[("lit", formula.predicate, terms, positive)]]
    if isinstance(formula, Equals):
        return [[("eq", _term(formula.left, scope), _term(formula.right, scope), positive)]]
    if isinstance(formula, Not):
        return _dnf(formula.part, slots, scope, not positive)
    if isinstance(formula, (And, Or)):
        parts = [_dnf(part, slots, scope, positive) for part in formula.parts]
        if isinstance(formula, And) == positive:  # a conjunction: multiply out
            return [[lit for part in combo for lit in part] for combo in itertools.product(*parts)]
        return [conj for part in parts for conj in part]
    if isinstance(formula, Exists):
        if not positive:
            raise PddlError("a negated 'exists' (a universal condition) is not supported")
        inner = dict(scope)
        for name, type_ in formula.variables:
            inner[name] = slots.new(name, type_)
        return _dnf(formula.body, slots, inner, positive)
    raise PddlError(f"unsupported condition {formula!r}")


def _flatten_effects(formula: Formula, scope: dict[str, int], conditions: list) -> list:
    if isinstance(formula, And):
        return [e for part in formula.parts for e in _flatten_effects(part, scope, conditions)]
    if isinstance(formula, When):
        slots = _Slots(())
        dnf = _dnf(formula.condition, slots, scope, True)
        if len(dnf) != 1 or slots.names or any(lit[0] != "lit" for lit in dnf[0]):
            raise PddlError("an effect condition must be a conjunction of literals")
        return _flatten_effects(formula.effect, scope, conditions + dnf[0])
    negated = isinstance(formula, Not)
    atom = formula.part if negated else formula
    if not isinstance(atom, Atom):
        raise PddlError(f"unsupported effect {formula!r}")
    terms = tuple(_term(t, scope) for t in atom.terms)
    return [(tuple(conditions), atom.predicate, terms, negated)]


# -- join plans ---------------------------------------------------------------------------------
_Step = Callable[[FactStore, list[int], dict], None]


class _Found(Exception):
    """Raised by a goal plan's final step: one solution is enough."""


def _stop(store: FactStore, env: list[int], out: dict) -> None:
    raise _Found


def _ground(terms: tuple[int, ...], env: list[int] | Args) -> Args:
    return tuple(env[t] if t >= 0 else ~t for t in terms)


class _Planner:
    """Compiles conjuncts into chains of closures, ordered by the problem's fact counts."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self._estimates: dict[tuple[str, tuple[int, ...]], float] = {}

    def estimate(self, pred: str, positions: tuple[int, ...]) -> float:
        """Mean number of initial facts of ``pred`` per value of the ``positions``."""
        key = (pred, positions)
        if key not in self._estimates:
            facts = self.task.initial_sets.get(pred, {})
            keys = {tuple(args[p] for p in positions) for args in facts}
            self._estimates[key] = len(facts) / len(keys) if positions and facts else len(facts)
        return self._estimates[key]

    def compile(self, conjunct: Conjunct, needed: Iterable[int], final: _Step) -> _Step | None:
        """A plan binding the ``needed`` slots every way that satisfies ``conjunct``; ``None``
        when a ground static literal makes it impossible."""
        task = self.task
        bound: set[int] = set()
        pending = list(conjunct.literals)
        equalities = list(conjunct.equalities)
        needed = set(needed)
        steps: list[Callable[[_Step], _Step]] = []
        while pending or equalities or not needed <= bound:
            ready = [lit for lit in pending if all(t < 0 or t in bound for t in lit.terms)]
            for lit in ready:
                pending.remove(lit)
                if lit.predicate in task.static and all(t < 0 for t in lit.terms):
                    if task.initial_holds(lit.predicate, _ground(lit.terms, ())) != lit.positive:
                        return None
                    continue
                steps.append(self._check(lit))
            ready_eq = [e for e in equalities if all(t < 0 or t in bound for t in e[:2])]
            for eq in ready_eq:
                equalities.remove(eq)
                steps.append(_check_equal(*eq))
            if ready or ready_eq:
                continue
            candidates = [lit for lit in pending if lit.positive]
            if candidates:
                lit = min(candidates, key=lambda lit, bound=frozenset(bound): self.estimate(
                    lit.predicate,
                    tuple(i for i, t in enumerate(lit.terms) if t < 0 or t in bound)))
                pending.remove(lit)
                steps.append(self._scan(lit, bound, conjunct.slot_types))
                bound |= {t for t in lit.terms if t >= 0}
                continue
            unbound = sorted(
                {t for lit in pending for t in lit.terms if t >= 0 and t not in bound}
                | {t for e in equalities for t in e[:2] if t >= 0 and t not in bound}
                | (needed - bound)
            )
            free = unbound[0]
            steps.append(_enumerate(free, task.objects_of(conjunct.slot_types[free])))
            bound.add(free)
        run = final
        for make in reversed(steps):
            run = make(run)
        return run

    def _check(self, lit: Literal) -> Callable[[_Step], _Step]:
        pred, terms, positive = lit.predicate, lit.terms, lit.positive
        static = self.task.static_store if lit.predicate in self.task.static else None

        def make(nxt: _Step) -> _Step:
            def check(store: FactStore, env: list[int], out: dict) -> None:
                facts = (static or store).sets.get(pred)
                args = tuple(env[t] if t >= 0 else ~t for t in terms)
                if (facts is not None and args in facts) == positive:
                    nxt(store, env, out)
            return check
        return make

    def _scan(
        self, lit: Literal, bound: set[int], slot_types: tuple[str, ...]
    ) -> Callable[[_Step], _Step]:
        task = self.task
        pred, terms = lit.predicate, lit.terms
        positions = tuple(i for i, t in enumerate(terms) if t < 0 or t in bound)
        key_terms = tuple(terms[i] for i in positions)
        binds: list[tuple[int, int, frozenset[int] | None]] = []
        repeats: list[tuple[int, int]] = []
        first: dict[int, int] = {}
        for i, t in enumerate(terms):
            if t < 0 or t in bound:
                continue
            if t in first:
                repeats.append((i, first[t]))
            else:
                first[t] = i
                binds.append((i, t, task.allowed(slot_types[t])))
        index = task.register_index(pred, positions)
        static = task.static_store if pred in task.static else None

        def make(nxt: _Step) -> _Step:
            def scan(store: FactStore, env: list[int], out: dict) -> None:
                key = tuple(env[t] if t >= 0 else ~t for t in key_terms)
                for args in (static or store).bucket(pred, index, key):
                    for i, j in repeats:
                        if args[i] != args[j]:
                            break
                    else:
                        for i, slot, allowed in binds:
                            value = args[i]
                            if allowed is not None and value not in allowed:
                                break
                            env[slot] = value
                        else:
                            nxt(store, env, out)
            return scan
        return make


def _check_equal(left: int, right: int, positive: bool) -> Callable[[_Step], _Step]:
    def make(nxt: _Step) -> _Step:
        def check(store: FactStore, env: list[int], out: dict) -> None:
            a = env[left] if left >= 0 else ~left
            b = env[right] if right >= 0 else ~right
            if (a == b) == positive:
                nxt(store, env, out)
        return check
    return make


def _enumerate(slot: int, values: tuple[int, ...]) -> Callable[[_Step], _Step]:
    def make(nxt: _Step) -> _Step:
        def enum(store: FactStore, env: list[int], out: dict) -> None:
            for value in values:
                env[slot] = value
                nxt(store, env, out)
        return enum
    return make


def _record(terms: tuple[int, ...]) -> _Step:
    def record(store: FactStore, env: list[int], out: dict) -> None:
        out[tuple(env[t] if t >= 0 else ~t for t in terms)] = None
    return record


def _nothing(store: FactStore, env: list[int], out: dict) -> None:
    """A part that can never be satisfied (a static literal that is false)."""


def _collect(s_index: int, n_params: int, d_index: int) -> _Step:
    def emit(store: FactStore, env: list[int], out: dict) -> None:
        key = (s_index, tuple(env[:n_params]))
        if key not in out:
            out[key] = (s_index, key[1], d_index, tuple(env))
    return emit


# -- the compiled task --------------------------------------------------------------------------
class Task:
    """A PDDL domain and problem, compiled once and read-only afterwards (threads may share it).

    Entities (problem objects and domain constants) are numbered in name order, so sorting int
    tuples sorts facts the way TextWorld sorts its propositions.
    """

    def __init__(self, domain: Domain, problem: Problem) -> None:
        declared = dict(domain.constants)
        declared.update(problem.objects)
        self.names: tuple[str, ...] = tuple(sorted(declared))
        self.ids: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        self.types: tuple[str, ...] = tuple(declared[name] for name in self.names)
        self.type_parents = dict(domain.types)
        known = {ROOT_TYPE, *self.types, *self.type_parents, *self.type_parents.values()}
        self._allowed: dict[str, frozenset[int] | None] = {t: self._members(t) for t in known}
        raw_effects = [
            _flatten_effects(s.effect, {p: i for i, (p, _) in enumerate(s.parameters)}, [])
            for s in domain.schemas
        ]
        fluent = {effect[1] for effects in raw_effects for effect in effects}
        self.fluent: frozenset[str] = frozenset(fluent)
        self.static: frozenset[str] = frozenset(set(domain.predicates) - fluent)
        self.schemas = tuple(
            CompiledSchema(
                name=s.name,
                parameters=tuple((n.lstrip("?"), t) for n, t in s.parameters),
                disjuncts=self._condition(s.precondition, s.parameters),
                effects=tuple(self._effect(e) for e in effects),
            )
            for s, effects in zip(domain.schemas, raw_effects, strict=True)
        )
        self.goal = self._condition(problem.goal, ())
        self.initial_sets: dict[str, dict[Args, None]] = {}
        for atom in problem.init:
            args = tuple(self._id(t) for t in atom.terms)
            self.initial_sets.setdefault(atom.predicate, {})[args] = None
        self._index_specs: dict[str, list[tuple[int, ...]]] = {}
        self.static_store = FactStore({})
        planner = _Planner(self)
        self._plans: list[tuple[_Step, int]] = []
        for s_index, schema in enumerate(self.schemas):
            params = range(len(schema.parameters))
            for d_index, conjunct in enumerate(schema.disjuncts):
                plan = planner.compile(
                    conjunct, params, _collect(s_index, len(schema.parameters), d_index))
                if plan is not None:
                    self._plans.append((plan, len(conjunct.slot_types)))
        self._goal_plans = [
            (plan, len(conjunct.slot_types)) for conjunct in self.goal
            if (plan := planner.compile(conjunct, (), _stop)) is not None
        ]
        producers = self._producers(planner)
        static_store = FactStore(
            {p: specs for p, specs in self._index_specs.items() if p in self.static})
        for pred, facts in self.initial_sets.items():
            if pred in self.static:
                for args in facts:
                    static_store.add(pred, args)
        self.static_store.sets, self.static_store.indexes = static_store.sets, static_store.indexes
        self.fluent_specs = {p: s for p, s in self._index_specs.items() if p not in self.static}
        self.producible: dict[str, set[Args]] = {}
        for pred, producer_plans in producers:
            found = self.producible.setdefault(pred, set(self.initial_sets.get(pred, ())))
            for parts in producer_plans:
                out: dict[Args, None] = {}
                if all(self._satisfiable(plan, n) for plan, n, lists in parts if not lists):
                    for plan, n_slots, lists in parts:
                        if lists:
                            plan(FactStore({}), [-1] * n_slots, out)
                found.update(out)
        self._effect_shapes = [
            [self._effect_shape(schema, conjunct) for conjunct in schema.disjuncts]
            for schema in self.schemas
        ]
        self.always_changes = [
            [self._always_changes(schema, conjunct) for conjunct in schema.disjuncts]
            for schema in self.schemas
        ]

    # -- compile-time helpers ----------------------------------------------------------------
    def _id(self, name: str) -> int:
        if name not in self.ids:
            raise PddlError(f"undeclared object {name!r}")
        return self.ids[name]

    def _term(self, term: int | str) -> int:
        return term if isinstance(term, int) else ~self._id(term)

    def _condition(
        self, formula: Formula, parameters: tuple[tuple[str, str], ...]
    ) -> tuple[Conjunct, ...]:
        slots = _Slots(parameters)
        raw = _dnf(formula, slots, dict(slots.scope), True)
        conjuncts = []
        for lits in raw:
            literals = tuple(
                Literal(pred, tuple(self._term(t) for t in terms), positive)
                for kind, pred, terms, positive in lits if kind == "lit"
            )
            equalities = tuple(
                (self._term(a), self._term(b), positive)
                for kind, a, b, positive in lits if kind == "eq"
            )
            conjuncts.append(Conjunct(literals, equalities, tuple(slots.types)))
        return tuple(conjuncts)

    def _effect(self, raw: tuple) -> Effect:
        conditions, pred, terms, negated = raw
        return Effect(
            tuple(Literal(c[1], tuple(self._term(t) for t in c[2]), c[3]) for c in conditions),
            pred, tuple(self._term(t) for t in terms), negated,
        )

    def subtypes(self, type_: str) -> frozenset[str]:
        """``type_`` and its descendants (everything for the root type ``object``)."""
        if type_ == ROOT_TYPE:
            return frozenset(self.types) | frozenset(self.type_parents) | {ROOT_TYPE}
        out = {type_}
        changed = True
        while changed:
            changed = False
            for child, parent in self.type_parents.items():
                if parent in out and child not in out:
                    out.add(child)
                    changed = True
        return frozenset(out)

    def _members(self, type_: str) -> frozenset[int] | None:
        if type_ == ROOT_TYPE:
            return None
        subtypes = self.subtypes(type_)
        return frozenset(i for i, t in enumerate(self.types) if t in subtypes)

    def allowed(self, type_: str) -> frozenset[int] | None:
        """Entity ids of ``type_`` (``None`` for the root type: anything goes); computed for
        every declared type when the task is built, so the task is never written to later."""
        found = self._allowed.get(type_, ())
        return self._members(type_) if found == () else found

    def objects_of(self, type_: str) -> tuple[int, ...]:
        allowed = self.allowed(type_)
        return tuple(range(len(self.names))) if allowed is None else tuple(sorted(allowed))

    def register_index(self, pred: str, positions: tuple[int, ...]) -> int:
        specs = self._index_specs.setdefault(pred, [])
        if positions not in specs:
            specs.append(positions)
        return specs.index(positions)

    def _producers(self, planner: _Planner) -> list[tuple[str, list[tuple[_Step, int, bool]]]]:
        """Plans listing, per predicate that an effect deletes without its precondition
        requiring the atom (or that an effect condition tests), the atoms some add effect can
        make true as far as the static facts tell: Fast Downward drops a delete (or a
        condition) on an atom its reachability analysis rules out, and TextWorld then never
        sees it. (Its analysis also follows fluent preconditions; for ALFWorld's domain the
        static one rules out the same atoms.)"""
        wanted = set()
        for schema in self.schemas:
            for effect in schema.effects:
                wanted |= {lit.predicate for lit in effect.conditions
                           if lit.predicate not in self.static}
                guarded = all(
                    any(lit.positive and lit.predicate == effect.predicate
                        and lit.terms == effect.terms for lit in conjunct.literals)
                    for conjunct in schema.disjuncts)
                if effect.negated and not guarded:
                    wanted.add(effect.predicate)
        producers = []
        for pred in sorted(wanted):
            plans = []
            for schema in self.schemas:
                for effect in schema.effects:
                    if effect.negated or effect.predicate != pred:
                        continue
                    for conjunct in schema.disjuncts:
                        literals = [lit for lit in (*conjunct.literals, *effect.conditions)
                                    if lit.predicate in self.static]
                        plans.append(self._projection(planner, literals, conjunct, effect.terms))
            producers.append((pred, plans))
        return producers

    def _projection(
        self, planner: _Planner, literals: list[Literal], conjunct: Conjunct, terms: tuple
    ) -> list[tuple[_Step, int, bool]]:
        """Plans that together list the values of ``terms`` satisfying ``literals``: one per
        connected part of the literals (a part without any of the terms' slots only has to
        be satisfiable, not enumerated). ``(plan, slots, lists_terms)``; a ``None`` plan
        would mean impossible, given as a part that never succeeds."""
        needed = {t for t in terms if t >= 0}
        parent: dict[int, int] = {}

        def find(x: int) -> int:
            while parent.setdefault(x, x) != x:
                x = parent[x]
            return x

        items = [(lit, {t for t in lit.terms if t >= 0}) for lit in literals]
        items += [(eq, {t for t in eq[:2] if t >= 0}) for eq in conjunct.equalities]
        for _, slots in items:
            for a, b in itertools.pairwise(sorted(slots)):
                parent[find(a)] = find(b)
        main_roots = {find(t) for t in needed}
        parts: dict[int | None, list] = {}
        for item, slots in items:
            root = find(min(slots)) if slots else None
            parts.setdefault(None if root in main_roots else root, []).append(item)
        plans = []
        n_slots = len(conjunct.slot_types)
        for root, part in parts.items():
            lits = tuple(i for i in part if isinstance(i, Literal))
            eqs = tuple(i for i in part if not isinstance(i, Literal))
            sub = Conjunct(lits, eqs, conjunct.slot_types)
            lists = root is None
            plan = planner.compile(sub, needed if lists else (),
                                   _record(terms) if lists else _stop)
            plans.append((plan or _nothing, n_slots, lists))
        if None not in parts:
            plans.append((planner.compile(Conjunct((), (), conjunct.slot_types), needed,
                                          _record(terms)), n_slots, True))
        return plans

    @staticmethod
    def _satisfiable(plan: _Step, n_slots: int) -> bool:
        try:
            plan(FactStore({}), [-1] * n_slots, {})
        except _Found:
            return True
        return False

    def reachable(self, pred: str, args: Args) -> bool:
        """Whether Fast Downward would keep the atom as a fact its operators may change."""
        found = self.producible.get(pred)
        return found is None or args in found

    def _effect_shape(self, schema: CompiledSchema, conjunct: Conjunct) -> tuple[list, list, list]:
        """The term pairs whose equality, the static conditions whose truth and the atoms whose
        reachability decide an operator's reported effects (see :meth:`effect_key`)."""
        atoms = [(lit.predicate, lit.terms) for lit in conjunct.literals
                 if lit.predicate not in self.static]
        statics, reach = [], []
        for effect in schema.effects:
            atoms.append((effect.predicate, effect.terms))
            if effect.negated and effect.predicate in self.producible:
                reach.append((effect.predicate, effect.terms))
            for lit in effect.conditions:
                if lit.predicate in self.static:
                    statics.append((lit.predicate, lit.terms))
                else:
                    atoms.append((lit.predicate, lit.terms))
                    if lit.predicate in self.producible:
                        reach.append((lit.predicate, lit.terms))
        pairs = [tuple((x, y) for x, y in zip(a[1], b[1], strict=True) if x != y)
                 for a, b in itertools.combinations(atoms, 2)
                 if a[0] == b[0] and len(a[1]) == len(b[1]) and a[1] != b[1]]
        return sorted(set(pairs)), statics, reach

    def _always_changes(self, schema: CompiledSchema, conjunct: Conjunct) -> bool:
        """Whether every operator of the schema and disjunct has an unconditional add effect
        that its precondition cannot already make true (so it is never a dropped no-op)."""
        required = {lit.predicate for lit in conjunct.literals if lit.positive}
        return any(not e.negated and not e.conditions and e.predicate not in required
                   for e in schema.effects)

    def effect_key(self, ground: Ground) -> tuple:
        """A key equal for operators of one schema and disjunct whose :meth:`reported_effects`
        are the same up to their arguments (which atoms coincide, which static conditions
        hold): :meth:`symbolic_effects` can be shared between them."""
        s_index, _, d_index, env = ground
        pairs, statics, reach = self._effect_shapes[s_index][d_index]
        return (
            s_index, d_index,
            tuple(all((env[x] if x >= 0 else ~x) == (env[y] if y >= 0 else ~y) for x, y in diff)
                  for diff in pairs),
            tuple(self.initial_holds(p, _ground(t, env)) for p, t in statics),
            tuple(self.reachable(p, _ground(t, env)) for p, t in reach),
        )

    def symbolic_effects(self, ground: Ground) -> tuple[tuple[int, bool], ...]:
        """:meth:`reported_effects` as (index into the schema's effects, value) pairs."""
        effects = self.schemas[ground[0]].effects
        atoms = [(e.predicate, _ground(e.terms, ground[3])) for e in effects]
        return tuple((atoms.index(atom), value) for atom, value in self.reported_effects(ground))

    def ground_effects(
        self, ground: Ground, symbolic: tuple[tuple[int, bool], ...]
    ) -> list[tuple[GroundAtom, bool]]:
        effects = self.schemas[ground[0]].effects
        env = ground[3]
        return [((effects[i].predicate, _ground(effects[i].terms, env)), value)
                for i, value in symbolic]

    def initial_holds(self, pred: str, args: Args) -> bool:
        return args in self.initial_sets.get(pred, {})

    # -- runtime -----------------------------------------------------------------------------
    def initial_store(self) -> FactStore:
        """The fluent facts of the initial state, indexed (a fresh, private copy)."""
        store = FactStore(self.fluent_specs)
        for pred, facts in self.initial_sets.items():
            if pred not in self.static:
                for args in facts:
                    store.add(pred, args)
        return store

    def holds(self, store: FactStore, pred: str, args: Args) -> bool:
        return (self.static_store if pred in self.static else store).holds(pred, args)

    def candidates(self, store: FactStore) -> list[Ground]:
        """Operators whose precondition holds, one per schema and parameter values (the first
        disjunct found), in plan order."""
        found: dict[tuple[int, Args], Ground] = {}
        for plan, n_slots in self._plans:
            plan(store, [-1] * n_slots, found)
        return list(found.values())

    def goal_holds(self, store: FactStore) -> bool:
        for plan, n_slots in self._goal_plans:
            try:
                plan(store, [-1] * n_slots, {})
            except _Found:
                return True
        return False

    def reported_effects(self, ground: Ground) -> tuple[tuple[GroundAtom, bool], ...]:
        """The operator's effect atoms as the translated operator holds them: ``(atom, True)``
        sets it, ``(atom, False)`` clears it, whatever the effect conditions; empty for an
        operator Fast Downward drops as a no-op."""
        s_index, _, d_index, env = ground
        schema = self.schemas[s_index]
        pre: dict[GroundAtom, bool] = {
            (lit.predicate, _ground(lit.terms, env)): lit.positive
            for lit in schema.disjuncts[d_index].literals if lit.predicate not in self.static
        }
        adds: list[tuple[tuple, GroundAtom]] = []
        dels: list[tuple[tuple, GroundAtom]] = []
        for effect in schema.effects:
            conditions = []
            for lit in effect.conditions:
                args = _ground(lit.terms, env)
                if lit.predicate in self.static:
                    if self.initial_holds(lit.predicate, args) != lit.positive:
                        break
                elif self.reachable(lit.predicate, args):
                    conditions.append(((lit.predicate, args), lit.positive))
                elif lit.positive:  # a condition that can never hold
                    break
            else:
                atom = (effect.predicate, _ground(effect.terms, env))
                if effect.negated and pre.get(atom) is not True and not self.reachable(*atom):
                    continue  # deleting what can never be true: not a fluent fact
                (dels if effect.negated else adds).append((tuple(conditions), atom))
        dels = [d for d in dels if d not in adds]
        by_atom: dict[GroundAtom, dict[bool, list[tuple]]] = {}
        for conditions, atom in adds:
            by_atom.setdefault(atom, {}).setdefault(True, []).append(conditions)
        for conditions, atom in dels:
            if () in by_atom.get(atom, {}).get(True, ()):  # an unconditional add always wins
                continue
            by_atom.setdefault(atom, {}).setdefault(False, []).append(conditions)
        out: list[tuple[GroundAtom, bool]] = []
        for atom, posts in by_atom.items():
            for value, condition_list in posts.items():
                if pre.get(atom) == value:
                    continue  # the precondition already makes it so
                if any(all(pre.get(a, v) == v for a, v in cond) for cond in condition_list):
                    out.append((atom, value))
        return tuple(out)

    def fired_effects(
        self, store: FactStore, ground: Ground
    ) -> tuple[list[GroundAtom], list[GroundAtom]]:
        """(adds, deletes) of the operator in ``store``, conditions read before any change."""
        s_index, _, _, env = ground
        adds: list[GroundAtom] = []
        dels: list[GroundAtom] = []
        for effect in self.schemas[s_index].effects:
            if all(self.holds(store, lit.predicate, _ground(lit.terms, env)) == lit.positive
                   for lit in effect.conditions):
                atom = (effect.predicate, _ground(effect.terms, env))
                (dels if effect.negated else adds).append(atom)
        return adds, dels
