"""The study's strict response format: ``<think>…</think><action>…</action>`` and nothing else.

Holds :func:`parse_response` (the check of ``prompts.md``), :class:`ParsedResponse`,
:func:`is_admissible` and :func:`format_response` (how well-formed responses are written, e.g.
by the expert agent). The check never raises: any ``str`` or ``bytes`` gets a verdict.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from arlarena_envs.base import coerce_action

__all__ = [
    "MAX_RESPONSE_CHARS",
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
    """Apply the strict format check of ``prompts.md`` to one LLM response.

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
