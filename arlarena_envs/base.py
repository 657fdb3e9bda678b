"""The text-env contract every ARLArena environment follows.

Holds:
    * :data:`TEXT_CHARSET` and :func:`text_space` -- a ``gymnasium.spaces.Text`` that admits any
      printable unicode, because LLM observations and actions are free text.
    * :class:`TextEnv` -- the base class: string observations and actions, an ``info`` dict with
      ``task``, ``admissible_actions``, ``won``, ``anchor`` (and ``action_is_valid`` after a step),
      and the :meth:`TextEnv.expert_action` hook privileged agents use.
    * :func:`coerce_action` -- turns whatever a caller passes as an action into a bounded ``str``
      so that hostile input (bytes, huge strings, ``None``) never raises inside an env.
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar

import gymnasium as gym
from gymnasium import spaces

__all__ = [
    "MAX_ACTION_CHARS",
    "MAX_OBS_CHARS",
    "TEXT_CHARSET",
    "TextEnv",
    "coerce_action",
    "text_space",
]

MAX_OBS_CHARS = 100_000
"""Upper bound on an observation's length (the ``Text`` space's ``max_length``)."""

MAX_ACTION_CHARS = 1_000_000
"""Actions longer than this are cut before parsing: no env needs more, and it bounds work."""


def _printable_charset() -> frozenset[str]:
    # Every printable code point of the Basic Multilingual Plane plus newline and tab: enough for
    # any language, box-drawing grids and LaTeX, while keeping the space's sampling well defined.
    chars = {chr(c) for c in range(sys.maxunicode if sys.maxunicode < 0x10000 else 0x10000)}
    return frozenset(c for c in chars if c.isprintable()) | {"\n", "\t"}


TEXT_CHARSET: frozenset[str] = _printable_charset()


def text_space(max_length: int = MAX_OBS_CHARS) -> spaces.Text:
    """A ``Text`` space of any printable unicode up to ``max_length`` characters."""
    return spaces.Text(max_length=max_length, min_length=0, charset=TEXT_CHARSET)


def coerce_action(action: Any) -> str:
    """Return ``action`` as a ``str`` of at most :data:`MAX_ACTION_CHARS` characters.

    ``bytes`` are decoded with replacement, ``None`` becomes ``""`` and anything else goes
    through ``str``; this is the one place envs turn untrusted input into text.
    """
    if action is None:
        text = ""
    elif isinstance(action, (bytes, bytearray)):
        text = bytes(action[:MAX_ACTION_CHARS]).decode("utf-8", errors="replace")
    else:
        text = action if isinstance(action, str) else str(action)
    return text[:MAX_ACTION_CHARS]


class TextEnv(gym.Env[str, str]):
    """Base class of the ARLArena text environments.

    Subclasses set :attr:`prompt_template` (the name of their template in
    :mod:`wrappers.templates`), implement ``reset``/``step`` returning string observations, and
    build every ``info`` with :meth:`make_info` so the contract's keys are always there.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    prompt_template: ClassVar[str] = ""
    """Name of the template in :data:`wrappers.templates.TEMPLATES` used by ``PromptWrapper``."""
    lowercase_actions: ClassVar[bool] = True
    """Whether the strict format check lower-cases the extracted action (not for WebShop)."""

    observation_space = text_space()
    action_space = text_space(MAX_ACTION_CHARS)

    @staticmethod
    def make_info(
        *,
        task: str,
        admissible_actions: list[str],
        won: bool,
        anchor: str,
        action_is_valid: bool | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """Build an ``info`` dict with the contract's keys (``action_is_valid`` after a step)."""
        info: dict[str, Any] = {
            "task": task,
            "admissible_actions": list(admissible_actions),
            "won": bool(won),
            "anchor": anchor,
        }
        if action_is_valid is not None:
            info["action_is_valid"] = bool(action_is_valid)
        info.update(extra)
        return info

    def expert_action(self) -> str | None:
        """The raw action an expert would take now, or ``None`` if the env has no expert.

        Privileged: it reads the true state. Only the expert agent and tests call it.
        """
        return None
