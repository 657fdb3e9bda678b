"""Format checks of responses ``<think>…</think><action>…</action>``: the study's per env, and
ARLArena's strict one.

Holds :class:`ParsedResponse`, :class:`FormatCheck` and :data:`FORMAT_CHECKS` (name → check):

* ``alfworld``, ``webshop``, ``sokoban``: the study's projections (its
  ``env_package/*/projection.py``, see ``docs/prompts.md``), what a response is judged by
  by default. ALFWorld: the strict shape, one tag of each, no CJK ideograph (U+4E00-9FFF only),
  an admissible action (lower-cased). WebShop: the same without admissibility. Sokoban (loose):
  ``<think>`` and ``</think>`` present and a direction, or ``still``, as a substring of the
  lower-cased ``<action>`` content. A response with no ``<action>`` block executes the last 30
  characters of the response (ALFWorld, WebShop) or ``still`` (Sokoban).
* ``strict``: ARLArena's stricter check, :func:`parse_response` (also any CJK script and
  full-width punctuation, admissibility everywhere, case kept where the env asks); a response
  with no ``<action>`` block executes nothing.

Also :func:`is_admissible`, :func:`contains_cjk` and :func:`format_response` (how well-formed
responses are written, e.g. by the expert agent). No check raises: any ``str`` or ``bytes``
gets a verdict, in time linear in its length.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from arlarena_envs.base import coerce_action

__all__ = [
    "FORMAT_CHECKS",
    "MAX_RESPONSE_CHARS",
    "FormatCheck",
    "ParsedResponse",
    "contains_cjk",
    "format_response",
    "is_admissible",
    "parse_response",
]

MAX_RESPONSE_CHARS = 32_768
"""Longer responses fail the check (far beyond any response budget the study uses)."""

_STRICT = re.compile(r"^\s*<think>(.*?)</think>\s*<action>(.*?)</action>\s*$", re.S | re.I)
_ACTION = re.compile(r"<action>(.*?)</action>", re.S | re.I)
_TAGS = ("<think>", "</think>", "<action>", "</action>")
_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
    "\U00020000-\U0003134f]"
)
# An admissible entry such as "search[<your query>]" stands for any non-empty "search[...]".
_TEMPLATE_ENTRY = re.compile(r"^(\w+)\[<[^>]*>\]$")


@dataclass(frozen=True)
class ParsedResponse:
    """The verdict on one response.

    Attributes:
        format_ok: every rule of the strict check holds (including admissibility).
        action: the extracted action (stripped, lower-cased if asked), or ``None`` if no
            ``<action>…</action>`` block could be found at all.
        think: the reasoning text when the response has the strict shape, else ``None``.
        error: why the check failed (``None`` when ``format_ok``).
    """

    format_ok: bool
    action: str | None
    think: str | None = None
    error: str | None = None


def contains_cjk(text: str) -> bool:
    """Whether ``text`` has a Chinese, Japanese or Korean character (or CJK punctuation)."""
    return _CJK.search(text) is not None


def is_admissible(action: str, admissible: Sequence[str]) -> bool:
    """Whether ``action`` is in ``admissible``; ``name[<...>]`` entries admit any ``name[text]``."""
    if action in admissible:
        return True
    for entry in admissible:
        match = _TEMPLATE_ENTRY.match(entry)
        if match:
            prefix = match.group(1) + "["
            if action.startswith(prefix) and action.endswith("]") and len(action) > len(prefix) + 1:
                return True
    return False


def parse_response(
    response: str | bytes | None,
    admissible: Sequence[str] = (),
    *,
    lowercase: bool = True,
) -> ParsedResponse:
    """ARLArena's strict format check (``strict``) of one LLM response.

    A response is valid only if it is exactly one ``<think>`` block followed by one ``<action>``
    block (tags case-insensitive, whitespace around them allowed), has no CJK character, is at
    most :data:`MAX_RESPONSE_CHARS` long, and its action is admissible (when ``admissible`` is
    non-empty). If it fails but an ``<action>`` block exists, the first one is still returned
    so the env can execute it.

    >>> parse_response("<think>go</think><action>Up</action>", ["up", "down"])
    ParsedResponse(format_ok=True, action='up', think='go', error=None)
    >>> parse_response("<think>a</think> I go up. <action>up</action>", ["up"]).error
    'text outside the <think>/<action> blocks'
    """
    text = coerce_action(response)
    head = text[: MAX_RESPONSE_CHARS + 1]
    found = _ACTION.search(head)
    action = _clean(found.group(1), lowercase) if found else None

    def fail(error: str) -> ParsedResponse:
        return ParsedResponse(False, action, None, error)

    if len(text) > MAX_RESPONSE_CHARS:
        return fail(f"response longer than {MAX_RESPONSE_CHARS} characters")
    lowered = text.lower()
    for tag in _TAGS:
        count = lowered.count(tag)
        if count != 1:
            return fail(f"expected exactly one {tag}, found {count}")
    strict = _STRICT.match(text)
    if strict is None:
        return fail("text outside the <think>/<action> blocks")
    if contains_cjk(text):
        return fail("CJK characters in the response")
    think, action = strict.group(1).strip(), _clean(strict.group(2), lowercase)
    if not action:
        return ParsedResponse(False, action, think, "empty action")
    if admissible and not is_admissible(action, admissible):
        return ParsedResponse(False, action, think, f"action {action[:80]!r} is not admissible")
    return ParsedResponse(True, action, think, None)


def _clean(action: str, lowercase: bool) -> str:
    action = action.strip()
    return action.lower() if lowercase else action


def format_response(think: str, action: str) -> str:
    """A well-formed response: ``<think>think</think><action>action</action>``."""
    return f"<think>{think}</think><action>{action}</action>"


# -- the study's projections --------------------------------------------------------------------
_STUDY_CJK = re.compile("[\u4e00-\u9fff]")
_OPEN = {tag: re.compile(rf"<\s*{tag}\s*>", re.I) for tag in ("think", "action")}
_CLOSE = {tag: re.compile(rf"</\s*{tag}\s*>", re.I) for tag in ("think", "action")}
_SOKOBAN_ACTIONS = ("up", "down", "left", "right", "still")


def _first_action_block(text: str) -> str | None:
    """The content of the leftmost ``<action>…</action>`` pair (spaces allowed inside the tags),
    as the study's non-greedy search finds it, without its quadratic worst case."""
    opening = _OPEN["action"].search(text)
    if opening is None:
        return None
    closing = _CLOSE["action"].search(text, opening.end())
    return None if closing is None else text[opening.end() : closing.start()]


def _study_strict(
    text: str, admissible: Sequence[str], lowercase: bool = True, *, pool: bool
) -> ParsedResponse:
    """The study's ALFWorld (``pool``) and WebShop projections: the strict shape, one tag of
    each, no CJK ideograph, and for ALFWorld an admissible action; always lower-cased (whatever
    ``lowercase`` says)."""
    counts = [len(pattern.findall(text)) for pattern in (*_OPEN.values(), *_CLOSE.values())]
    strict = _STRICT.match(text) if counts == [1, 1, 1, 1] else None
    error = None
    if strict is None:
        error = "not exactly <think>...</think><action>...</action>, one tag of each"
    elif _STUDY_CJK.search(text):
        error = "CJK characters in the response"
    if error is not None:
        block = _first_action_block(text)
        return ParsedResponse(False, None if block is None else block.strip().lower(), None, error)
    action = strict.group(2).strip().lower()
    think = strict.group(1).strip()
    if pool and admissible and action not in {a.lower() for a in admissible}:
        return ParsedResponse(False, action, think, f"action {action[:80]!r} is not admissible")
    return ParsedResponse(True, action, think, None)


def _sokoban(text: str, admissible: Sequence[str] = (), lowercase: bool = True) -> ParsedResponse:
    """The study's Sokoban projection: a direction (or ``still``) found in the ``<action>``
    content wins, the first of up/down/left/right/still, and ``<think>`` and ``</think>`` (as
    written) must both be there. Always lower-cased; ``admissible`` is not consulted."""
    lowered = text.lower()
    start, end = lowered.find("<action>"), lowered.find("</action>")
    if start == -1 or end == -1:
        return ParsedResponse(False, None, None, "no <action> and </action> tags")
    content = lowered[start + len("<action>") : end].strip()
    action = next((name for name in _SOKOBAN_ACTIONS if name in content), None)
    opening, closing = text.find("<think>"), text.find("</think>")
    think = text[opening + len("<think>") : closing].strip() if -1 < opening < closing else None
    if action is None:
        return ParsedResponse(False, "still", think, f"no direction in {content[:80]!r}")
    if opening == -1 or closing == -1:
        return ParsedResponse(False, action, think, "no <think> and </think> tags")
    return ParsedResponse(True, action, think, None)


@dataclass(frozen=True)
class FormatCheck:
    """A named format check: the verdict on a response and what runs when it has no action.

    Attributes:
        parse: ``(response text, admissible actions, lower-case?) → ParsedResponse``.
        no_action: the action executed for a response with no ``<action>`` block.
    """

    parse: Callable[[str, Sequence[str], bool], ParsedResponse]
    no_action: Callable[[str], str]

    def __call__(
        self, response: str | bytes | None, admissible: Sequence[str] = (), lowercase: bool = True
    ) -> tuple[ParsedResponse, str]:
        """The verdict and the action the env executes."""
        text = coerce_action(response)
        parsed = self.parse(text, admissible, lowercase)
        return parsed, parsed.action if parsed.action is not None else self.no_action(text)


def _tail(text: str) -> str:
    return text[-30:]


FORMAT_CHECKS: dict[str, FormatCheck] = {
    "alfworld": FormatCheck(partial(_study_strict, pool=True), _tail),
    "webshop": FormatCheck(partial(_study_strict, pool=False), _tail),
    "sokoban": FormatCheck(_sokoban, lambda _: "still"),
    "strict": FormatCheck(
        lambda text, admissible, lowercase: parse_response(text, admissible, lowercase=lowercase),
        lambda _: "",
    ),
}
