"""A small PDDL reader for ALFWorld's domain and problems, reading text as Fast Downward does.

Holds the formula nodes (:class:`Atom`, :class:`Not`, :class:`And`, :class:`Or`,
:class:`Exists`, :class:`Equals`, :class:`When`), :class:`Schema` (an action),
:class:`Domain`, :class:`Problem`, :func:`parse_domain`, :func:`parse_problem` and
:class:`PddlError`. Like Fast Downward's ``lisp_parser`` it drops ``;`` comments, splits on
brackets and lower-cases every token, so names come out exactly as TextWorld shows them
(``cabinet_bar__plus_00_dot_68...``). It reads the ADL subset ALFWorld uses: typed parameters,
``and``/``or``/``not``/``exists``/``=`` conditions, ``when`` effects; action costs are read and
ignored (they only matter to a planner). Anything else is a :class:`PddlError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "And",
    "Atom",
    "Domain",
    "Equals",
    "Exists",
    "Formula",
    "Not",
    "Or",
    "PddlError",
    "Problem",
    "Schema",
    "When",
    "parse_domain",
    "parse_problem",
]

ROOT_TYPE = "object"


class PddlError(ValueError):
    """The text is not PDDL this reader understands."""


@dataclass(frozen=True)
class Atom:
    """``(predicate term ...)``; a term is a ``?variable`` or a constant name."""

    predicate: str
    terms: tuple[str, ...]


@dataclass(frozen=True)
class Not:
    part: Formula


@dataclass(frozen=True)
class And:
    parts: tuple[Formula, ...]


@dataclass(frozen=True)
class Or:
    parts: tuple[Formula, ...]


@dataclass(frozen=True)
class Exists:
    variables: tuple[tuple[str, str], ...]
    body: Formula


@dataclass(frozen=True)
class Equals:
    left: str
    right: str


@dataclass(frozen=True)
class When:
    """A conditional effect: ``effect`` (an atom or its negation) happens if ``condition``."""

    condition: Formula
    effect: Formula


Formula = Atom | Not | And | Or | Exists | Equals | When


@dataclass(frozen=True)
class Schema:
    """An action schema: typed parameters, precondition and effect."""

    name: str
    parameters: tuple[tuple[str, str], ...]
    precondition: Formula
    effect: Formula


@dataclass(frozen=True)
class Domain:
    """Types (child → parent), predicates (name → arity), constants and action schemas."""

    name: str
    types: dict[str, str]
    predicates: dict[str, int]
    constants: tuple[tuple[str, str], ...]
    schemas: tuple[Schema, ...]


@dataclass(frozen=True)
class Problem:
    """Objects (name, type) in declaration order, initial atoms (ground) and the goal."""

    name: str
    objects: tuple[tuple[str, str], ...]
    init: tuple[Atom, ...]
    goal: Formula


Sexp = str | list


_KEYWORDS = frozenset({"and", "or", "not", "exists", "forall", "imply", "either", "when", "="})
_COMMENT = re.compile(r";[^\n]*")
_TOKEN = re.compile(r"[()]|\?[^\s()?]*|[^\s()?]+")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(_COMMENT.sub("", text).lower())


def _read(text: str) -> list[Sexp]:
    stack: list[list[Sexp]] = []
    result: list[Sexp] | None = None
    for token in _tokens(text):
        if result is not None:
            raise PddlError(f"unexpected token after the end: {token!r}")
        if token == "(":
            stack.append([])
        elif token == ")":
            if not stack:
                raise PddlError("unbalanced ')'")
            done = stack.pop()
            if stack:
                stack[-1].append(done)
            else:
                result = done
        elif not stack:
            raise PddlError(f"expected '(', got {token!r}")
        else:
            stack[-1].append(token)
    if result is None:
        raise PddlError("missing ')'" if stack else "empty PDDL text")
    return result


def _typed(items: list[Sexp]) -> tuple[tuple[str, str], ...]:
    """``a b - t c`` → ``(("a", "t"), ("b", "t"), ("c", "object"))``."""
    out: list[tuple[str, str]] = []
    pending: list[str] = []
    i = 0
    while i < len(items):
        item = items[i]
        if not isinstance(item, str):
            raise PddlError(f"unsupported typed list entry {item!r}")
        if item == "-":
            if i + 1 >= len(items) or not isinstance(items[i + 1], str):
                raise PddlError("a '-' must be followed by a type name")
            out += [(name, str(items[i + 1])) for name in pending]
            pending = []
            i += 2
            continue
        pending.append(item)
        i += 1
    return tuple(out + [(name, ROOT_TYPE) for name in pending])


def _conjunction(node: Sexp, read, what: str) -> tuple[Formula | None, str, list[Sexp]]:
    """``()`` and ``(and ...)`` read with ``read``; else ``(None, head, rest)`` to go on."""
    if isinstance(node, str):
        raise PddlError(f"expected {what}, got {node!r}")
    if not node:
        return And(()), "", []
    head, *rest = node
    if head == "and":
        return And(tuple(read(part) for part in rest)), "", []
    return None, head, rest


def _formula(node: Sexp) -> Formula:
    done, head, rest = _conjunction(node, _formula, "a formula")
    if done is not None:
        return done
    if head == "or":
        return Or(tuple(_formula(part) for part in rest))
    if head == "not":
        if len(rest) != 1:
            raise PddlError(f"'not' takes one formula: {node!r}")
        return Not(_formula(rest[0]))
    if head == "exists":
        if len(rest) != 2 or isinstance(rest[0], str):
            raise PddlError(f"malformed 'exists': {node!r}")
        return Exists(_typed(rest[0]), _formula(rest[1]))
    if head == "=":
        if len(rest) != 2 or not all(isinstance(t, str) for t in rest):
            raise PddlError(f"malformed '=': {node!r}")
        return Equals(str(rest[0]), str(rest[1]))
    if head in ("forall", "imply", "either"):
        raise PddlError(f"'{head}' is not supported")
    if not isinstance(head, str) or not all(isinstance(t, str) for t in rest):
        raise PddlError(f"malformed atom: {node!r}")
    return Atom(head, tuple(str(t) for t in rest))


def _effect(node: Sexp) -> Formula:
    done, head, rest = _conjunction(node, _effect, "an effect")
    if done is not None:
        return done
    if head in ("increase", "decrease", "assign"):
        return And(())  # action costs: a planner's business
    if head == "when":
        if len(rest) != 2:
            raise PddlError(f"malformed 'when': {node!r}")
        return When(_formula(rest[0]), _effect(rest[1]))
    if head == "not":
        part = _formula(rest[0]) if len(rest) == 1 else None
        if not isinstance(part, Atom):
            raise PddlError(f"an effect can only negate an atom: {node!r}")
        return Not(part)
    if head == "forall":
        raise PddlError("'forall' effects are not supported")
    part = _formula(node)
    if not isinstance(part, Atom):
        raise PddlError(f"malformed effect: {node!r}")
    return part


def _section(node: list[Sexp], kind: str) -> tuple[str, list[list[Sexp]]]:
    if len(node) < 2 or node[0] != "define" or not isinstance(node[1], list):
        raise PddlError("expected (define (...) ...)")
    header = node[1]
    if len(header) != 2 or header[0] != kind or not isinstance(header[1], str):
        raise PddlError(f"expected (define ({kind} NAME) ...)")
    parts = [part for part in node[2:] if isinstance(part, list) and part]
    return header[1], parts


def _schema(part: list[Sexp]) -> Schema:
    if len(part) < 2 or not isinstance(part[1], str):
        raise PddlError("malformed (:action ...)")
    fields: dict[str, Sexp] = {}
    for i in range(2, len(part) - 1, 2):
        key = part[i]
        if isinstance(key, str):
            fields[key] = part[i + 1]
    params = fields.get(":parameters", [])
    if isinstance(params, str):
        raise PddlError(f"malformed :parameters of {part[1]}")
    return Schema(
        name=part[1],
        parameters=_typed(params),
        precondition=_formula(fields.get(":precondition", [])),
        effect=_effect(fields.get(":effect", [])),
    )


@lru_cache(maxsize=8)
def parse_domain(text: str) -> Domain:
    """Read a ``(define (domain ...))`` text (cached: every game carries the same domain)."""
    name, parts = _section(_read(text), "domain")
    types: dict[str, str] = {}
    predicates: dict[str, int] = {}
    constants: tuple[tuple[str, str], ...] = ()
    schemas: list[Schema] = []
    for part in parts:
        key = part[0]
        if key == ":types":
            types.update((t, parent) for t, parent in _typed(part[1:]) if t != ROOT_TYPE)
        elif key == ":predicates":
            for pred in part[1:]:
                if isinstance(pred, list) and pred and isinstance(pred[0], str):
                    predicates[pred[0]] = len(_typed(pred[1:]))
        elif key == ":constants":
            constants = _typed(part[1:])
        elif key == ":action":
            schemas.append(_schema(part))
        elif key in (":derived", ":durative-action"):
            raise PddlError(f"'{key}' is not supported")
    return Domain(name, types, predicates, constants, tuple(schemas))


def parse_problem(text: str) -> Problem:
    """Read a ``(define (problem ...))`` text."""
    name, parts = _section(_read(text), "problem")
    objects: tuple[tuple[str, str], ...] = ()
    init: list[Atom] = []
    goal: Formula = And(())
    for part in parts:
        key = part[0]
        if key == ":objects":
            objects = _typed(part[1:])
        elif key == ":init":
            for fact in part[1:]:
                if isinstance(fact, list) and fact and fact[0] == "=":
                    continue  # function values (costs)
                if (not isinstance(fact, list) or not fact or fact[0] in _KEYWORDS
                        or not all(isinstance(t, str) and t[0] != "?" for t in fact)):
                    raise PddlError(f"an initial fact must be a ground atom: {fact!r}")
                init.append(Atom(fact[0], tuple(fact[1:])))
        elif key == ":goal":
            if len(part) != 2:
                raise PddlError("malformed (:goal ...)")
            goal = _formula(part[1])
    return Problem(name, objects, tuple(init), goal)
