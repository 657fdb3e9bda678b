"""TextWorld's context-sensitive text grammar, compiled once and derived without TextWorld.

Holds :class:`Grammar` (an ALFWorld ``.twl2`` grammar: the action templates, feedback rules and
production rules), :func:`parse_grammar`, :func:`parse_symbols`, :func:`parse_query`, the symbol
nodes (:class:`Text`, :class:`Ref`, :class:`Expr`, :class:`Cond`, :class:`ListOf`),
:class:`Entity`, :class:`FactView` (what a derivation reads) and :func:`derive`.

TextWorld re-parses every template with Tatsu and deep-copies its context for every symbol it
expands; here a template is parsed once into immutable nodes and expanded recursively, with
TextWorld's semantics kept exactly:

* the first production rule whose condition has an assignment is used;
* ``{expr | query}`` expands ``expr`` once per assignment of ``query``; ``[...]`` lists them
  with the ``list_separator`` / ``list_last_separator`` / ``list_empty`` rules;
* a query is matched predicate by predicate over the facts sorted as TextWorld sorts them, a
  new placeholder never takes a value already used by another (TextWorld's rule), and the
  assignments come out in TextWorld's nested-loop order;
* ``{...}`` expressions are the attribute look-ups, ``+``, ``or`` and ``and`` that TextWorld's
  ``eval`` sees, evaluated by a small interpreter instead of ``eval``;
* like Tatsu's comment rule, leading blanks of a rule's text are dropped.
"""

from __future__ import annotations

import ast
import json
import operator
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

__all__ = [
    "Cond",
    "Entity",
    "Expr",
    "FactView",
    "Grammar",
    "GrammarError",
    "ListOf",
    "Placeholder",
    "Query",
    "Reads",
    "Ref",
    "Rule",
    "Text",
    "derive",
    "parse_grammar",
    "parse_query",
    "parse_symbols",
]


class GrammarError(ValueError):
    """A grammar, template or query this module cannot compile."""


Placeholder = tuple[str, str]
"""``(name, type)`` of a query placeholder, as TextWorld's ``Placeholder``."""


@dataclass(frozen=True)
class Query:
    """A conjunctive query ``pred(ph:type, ...) & ...``: predicates with placeholders."""

    source: str
    predicates: tuple[tuple[str, tuple[Placeholder, ...]], ...]


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Ref:
    """``#name#``: expands to the first applicable production rule of ``name``."""

    name: str


@dataclass(frozen=True)
class Expr:
    """``{expression}``: an attribute look-up such as ``r.name`` (``source`` as written)."""

    source: str
    evaluate: Callable[[dict[str, Any]], Any] = field(compare=False, repr=False)
    names: frozenset[str] = field(compare=False, repr=False, default=frozenset())


@dataclass(frozen=True)
class Cond:
    """``{expression | query}`` (``query`` may be ``None``)."""

    expression: Ref | Expr
    query: Query | None


@dataclass(frozen=True)
class ListOf:
    """``[{expression | query}]``: the expansions joined as an English list."""

    item: Cond


Symbol = Text | Ref | Expr | Cond | ListOf


@dataclass(frozen=True)
class Rule:
    condition: Query | None
    symbols: tuple[Symbol, ...]


@dataclass(frozen=True)
class Grammar:
    """Production rules by name, and each action's (command template, feedback) symbols."""

    rules: dict[str, tuple[Rule, ...]]
    actions: dict[str, tuple[tuple[Symbol, ...], tuple[Symbol, ...]]]

    def reads(self, symbols: Sequence[Symbol]) -> Reads:
        """What a derivation of ``symbols`` may read, through the rules it expands too."""
        seen: set[str] = set()
        preds: set[str] = set()
        names: set[str] = set()
        placeholders: set[Placeholder] = set()

        def add(query: Query | None) -> None:
            if query is not None:
                for pred, params in query.predicates:
                    preds.add(pred)
                    placeholders.update(params)

        def visit(items: Sequence[Symbol]) -> None:
            for sym in items:
                if isinstance(sym, ListOf):
                    sym = sym.item
                if isinstance(sym, Cond):
                    add(sym.query)
                    sym = sym.expression
                if isinstance(sym, Expr):
                    names.update(sym.names)
                if isinstance(sym, Ref) and sym.name not in seen:
                    seen.add(sym.name)
                    for rule in self.rules.get(sym.name, ()):
                        add(rule.condition)
                        visit(rule.symbols)

        visit(symbols)
        return Reads(frozenset(preds), frozenset(names), frozenset(placeholders))


@dataclass(frozen=True)
class Reads:
    """The predicates, expression variables and query placeholders a derivation may use."""

    predicates: frozenset[str]
    variables: frozenset[str]
    placeholders: frozenset[Placeholder]


# -- expressions --------------------------------------------------------------------------------
_ATTRIBUTES = frozenset(
    {"id", "type", "name", "noun", "adj", "desc", "room_type", "definite", "indefinite",
     "synonyms"})


def _compile_node(node: ast.AST) -> Callable[[dict[str, Any]], Any]:
    if isinstance(node, ast.Name):
        name = node.id

        def look_up(variables: dict[str, Any]) -> Any:
            if name not in variables:
                raise NameError(f"name {name!r} is not defined in this context")
            return variables[name]
        return look_up
    if isinstance(node, ast.Attribute) and node.attr in _ATTRIBUTES:
        inner, attr = _compile_node(node.value), node.attr
        return lambda variables: getattr(inner(variables), attr)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        value = node.value
        return lambda variables: value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _compile_node(node.left), _compile_node(node.right)
        return lambda variables: operator.add(left(variables), right(variables))
    if isinstance(node, ast.BoolOp):
        parts = [_compile_node(v) for v in node.values]
        is_or = isinstance(node.op, ast.Or)

        def boolean(variables: dict[str, Any]) -> Any:
            value = None
            for part in parts:
                value = part(variables)
                if bool(value) == is_or:
                    return value
            return value
        return boolean
    raise GrammarError(f"unsupported expression {ast.dump(node)}")


def _expression(source: str) -> Expr:
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise GrammarError(f"bad expression {source!r}: {exc}") from exc
    names = frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name))
    return Expr(source, _compile_node(tree.body), names)


# -- symbols (Tatsu's CSG grammar, by hand) -------------------------------------------------------
_TAG = re.compile(r"[\w()/!<>\-\s,.]+")
_GIVEN = re.compile(r"[^;|{}\n\[\]#]+")
_STATEMENT = re.compile(r"[^|\[\]{}\n<>]+")
_LITERAL = re.compile(r"[^;|\"<>\[\]#{}]*")
_BAR = re.compile(r"\s*\|\s*")
_TABS = re.compile(r"\t*")
_LINE_START_BLANKS = re.compile(r"\s*")


def _skip(text: str, pos: int) -> int:
    """Tatsu's token separator here: tabs, and blanks at the start of a line."""
    while True:
        start = pos
        if pos == 0 or text[pos - 1] == "\n":
            pos = _LINE_START_BLANKS.match(text, pos).end()
        pos = _TABS.match(text, pos).end()
        if pos == start:
            return pos


def _nonterminal(text: str, pos: int) -> tuple[Ref, int] | None:
    if text.startswith("#", pos):
        tag = _TAG.match(text, _skip(text, pos + 1))
        if tag is not None:
            end = _skip(text, tag.end())
            if text.startswith("#", end):
                return Ref(tag.group()), end + 1
    return None


def _conditional(text: str, pos: int) -> tuple[Cond, int] | None:
    if not text.startswith("{", pos):
        return None
    pos = _skip(text, pos + 1)
    found = _nonterminal(text, pos)
    if found is not None:
        expression: Ref | Expr = found[0]
        pos = found[1]
    else:
        statement = _STATEMENT.match(text, pos)
        if statement is None:
            return None
        expression, pos = _expression(statement.group()), statement.end()
    query = None
    bar = _BAR.match(text, _skip(text, pos))
    if bar is not None:
        given = _GIVEN.match(text, _skip(text, bar.end()))
        if given is None:
            return None
        query, pos = parse_query(given.group()), given.end()
    pos = _skip(text, pos)
    if not text.startswith("}", pos):
        return None
    return Cond(expression, query), pos + 1


def _symbol(text: str, pos: int) -> tuple[Symbol, int] | None:
    if text.startswith("[", pos):
        inner = _conditional(text, _skip(text, pos + 1))
        if inner is not None:
            end = _skip(text, inner[1])
            if text.startswith("]", end):
                return ListOf(inner[0]), end + 1
    for parse in (_conditional, _nonterminal):
        found = parse(text, pos)
        if found is not None:
            return found
    if text.startswith('"', pos):
        literal = _LITERAL.match(text, _skip(text, pos + 1))
        end = _skip(text, literal.end())
        if text.startswith('"', end):
            return Text(literal.group()), end + 1
    literal = _LITERAL.match(text, pos)
    return (Text(literal.group()), literal.end()) if literal.end() > pos else None


@lru_cache(maxsize=4096)
def parse_symbols(text: str) -> tuple[Symbol, ...]:
    """Parse a rule's right-hand side or a template; like Tatsu, parsing stops (keeping what
    it has) at the first character no symbol can start with."""
    symbols: list[Symbol] = []
    pos = _skip(text, 0)
    while pos < len(text):
        found = _symbol(text, pos)
        if found is None:
            break
        symbols.append(found[0])
        pos = _skip(text, found[1])
    return tuple(symbols)


_PREDICATE = re.compile(r"\s*(!?[\w/]+)\s*\((.*?)\)\s*")
_PLACEHOLDER = re.compile(r"\s*([\w']+)\s*(?::\s*([\w/-]+)\s*)?")


@lru_cache(maxsize=1024)
def parse_query(text: str) -> Query:
    """``holds(a:agent, o:object) & ...`` → :class:`Query` (placeholder type defaults to its
    name, as in TextWorld)."""
    predicates = []
    for part in text.split("&"):
        match = _PREDICATE.fullmatch(part)
        if match is None:
            raise GrammarError(f"bad query {text!r}")
        params = []
        for arg in filter(str.strip, match.group(2).split(",")):
            ph = _PLACEHOLDER.fullmatch(arg)
            if ph is None:
                raise GrammarError(f"bad placeholder {arg!r} in {text!r}")
            params.append((ph.group(1), ph.group(2) or ph.group(1)))
        predicates.append((match.group(1), tuple(params)))
    return Query(text, tuple(predicates))


# -- the .twl2 document -------------------------------------------------------------------------
_DOC_TOKEN = re.compile(
    r'(?P<block>"""(?:.|\n)*?""")|(?P<str>"[^"]*")|(?P<name>[\w/-]+)|(?P<punct>::|;|\{|\})')
_DOC_SKIP = re.compile(r"(?:\s+|#[^\n]*)*")


def _doc_tokens(text: str) -> list[tuple[str, str]]:
    tokens = []
    pos = _DOC_SKIP.match(text, 0).end()
    while pos < len(text):
        match = _DOC_TOKEN.match(text, pos)
        if match is None:
            raise GrammarError(f"unexpected text in the grammar at {text[pos:pos + 40]!r}")
        tokens.append((match.lastgroup or "", match.group()))
        pos = _DOC_SKIP.match(text, match.end()).end()
    return tokens


def _block(token: str) -> str:
    return textwrap.dedent(token[3:-3])


@lru_cache(maxsize=64)
def parse_grammar(text: str) -> Grammar:
    """Compile an ALFWorld ``.twl2`` grammar (TextWorld's ``GameLogic`` reading of it)."""
    tokens = _doc_tokens(text)
    data: dict[str, list[dict[str, Any]]] = {}
    actions: dict[str, tuple[str, str]] = {}
    i = 0

    def expect(kind: str, value: str | None = None) -> str:
        nonlocal i
        if i >= len(tokens) or tokens[i][0] != kind or (value and tokens[i][1] != value):
            got = tokens[i][1] if i < len(tokens) else "the end"
            raise GrammarError(f"expected {value or kind} in the grammar, got {got!r}")
        i += 1
        return tokens[i - 1][1]

    while i < len(tokens):
        head = expect("name")
        if head == "grammar":
            expect("punct", "::")
            data.update(json.loads(_block(expect("block"))))
            expect("punct", ";")
        elif head == "action":
            name = expect("name")
            expect("punct", "{")
            fields: dict[str, str] = {"grammar": '"""{}"""'}
            while tokens[i][1] != "}":
                key = expect("name")
                expect("punct", "::")
                fields[key] = tokens[i][1]
                i += 1
                expect("punct", ";")
            expect("punct", "}")
            if "template" not in fields or "feedback" not in fields:
                raise GrammarError(f"action {name} needs a template and a feedback")
            actions[name.lower()] = (fields["template"][1:-1], fields["feedback"][1:-1])
            lines = _block(fields["grammar"]).split("\n")
            kept = (line for line in lines if not line.lstrip().startswith("#"))
            data.update(json.loads("\n".join(kept)))
        else:
            raise GrammarError(f"unexpected {head!r} in the grammar")
    rules = {
        name: tuple(
            Rule(parse_query(r["condition"]) if r.get("condition") else None,
                 parse_symbols(r["rhs"]))
            for r in entries
        )
        for name, entries in data.items()
    }
    compiled = {
        name: (parse_symbols(template), parse_symbols(feedback))
        for name, (template, feedback) in actions.items()
    }
    return Grammar(rules, compiled)


# -- derivation ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Entity:
    """What a grammar expression sees of an object (TextWorld's ``EntityInfo``)."""

    id: str
    type: str
    name: str
    definite: str = "the"
    indefinite: str = "a"
    noun: None = None
    adj: None = None
    desc: None = None
    room_type: None = None
    synonyms: None = None

    def __str__(self) -> str:
        return self.name


class FactView(Protocol):
    """The facts a derivation reads: TextWorld's propositions, ``not_`` ones included."""

    def sorted_facts(self, predicate: str) -> Sequence[tuple[int, ...]]:
        """Argument tuples of ``predicate``, in TextWorld's (name) order."""
        ...

    def facts_with(self, predicate: str, position: int, value: int) -> Sequence[tuple[int, ...]]:
        """The sorted argument tuples of ``predicate`` with ``value`` at ``position``."""
        ...

    def allowed(self, type_: str) -> frozenset[int] | None:
        """Entity ids whose type is ``type_`` or below it (``None``: any)."""
        ...


Mapping = dict[Placeholder, int]


def assignments(query: Query, view: FactView, mapping: Mapping) -> list[Mapping]:
    """Every extension of ``mapping`` satisfying ``query``, in TextWorld's order.

    TextWorld scans all facts of a predicate in sorted order and skips those that disagree
    with what is bound; reading only the facts that agree on one bound position (still in
    sorted order) gives the same assignments in the same order.
    """
    results: list[Mapping] = []
    current = dict(mapping)
    used = set(current.values())
    seen = set(current)
    plan = []
    for pred, params in query.predicates:
        key = next((i for i, ph in enumerate(params) if ph in seen), None)
        new = []
        for ph in params:
            if ph not in seen:
                new.append(ph)
                seen.add(ph)
        plan.append((pred, key, params, [view.allowed(t) for _, t in params], new))

    def solve(depth: int) -> None:
        if depth == len(plan):
            results.append(dict(current))
            return
        pred, key, params, allowed, new = plan[depth]
        if key is None:
            facts = view.sorted_facts(pred)
        else:
            facts = view.facts_with(pred, key, current[params[key]])
        n = len(params)
        for args in facts:
            if len(args) != n:
                continue
            for ph, value, ok in zip(params, args, allowed, strict=True):
                if ok is not None and value not in ok:
                    break
                existing = current.get(ph)
                if existing is None:
                    if value in used:
                        break
                    current[ph] = value
                    used.add(value)
                elif existing != value:
                    break
            else:
                solve(depth + 1)
            for ph in new:
                used.discard(current.pop(ph, None))

    solve(0)
    return results


@dataclass(frozen=True)
class _Context:
    variables: dict[str, int]
    mapping: Mapping


def derive(
    grammar: Grammar,
    symbols: Sequence[Symbol],
    view: FactView,
    entities: Sequence[Entity],
    mapping: Mapping,
) -> str:
    """Expand ``symbols`` with ``mapping`` bound, as ``ContextSensitiveGrammar.derive`` does."""
    out: list[str] = []
    variables = {name: value for (name, _), value in mapping.items()}

    def query(q: Query, ctx: _Context) -> list[_Context]:
        return [
            _Context({**ctx.variables, **{name: v for (name, _), v in found.items()}}, found)
            for found in assignments(q, view, ctx.mapping)
        ]

    def expand(sym: Symbol, ctx: _Context) -> None:
        if isinstance(sym, Text):
            out.append(sym.text)
        elif isinstance(sym, Ref):
            rules = grammar.rules.get(sym.name)
            if not rules:
                raise GrammarError(f"no production rule for #{sym.name}#")
            for rule in rules:
                if rule.condition is None or assignments(rule.condition, view, ctx.mapping):
                    for part in rule.symbols:
                        expand(part, ctx)
                    return
            raise GrammarError(f"no applicable production rule for #{sym.name}#")
        elif isinstance(sym, Expr):
            out.append(str(sym.evaluate({k: entities[v] for k, v in ctx.variables.items()})))
        elif isinstance(sym, Cond):
            for found in query(sym.query, ctx) if sym.query else [ctx]:
                expand(sym.expression, found)
        else:
            item = sym.item
            found = query(item.query, ctx) if item.query else [ctx]
            if not found:
                expand(Ref("list_empty"), ctx)
            for i, item_ctx in enumerate(found):
                if i:
                    sep = "list_last_separator" if i == len(found) - 1 else "list_separator"
                    expand(Ref(sep), ctx)
                expand(item.expression, item_ctx)

    context = _Context(variables, dict(mapping))
    for sym in symbols:
        expand(sym, context)
    return "".join(out)
