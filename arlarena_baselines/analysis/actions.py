"""Action types per environment, read from the action text alone.

Holds :func:`env_family` (which rule set an env id falls under), :func:`classify_action` and
:data:`ACTION_TYPES` (each family's types in display order). Classifying from text means the
analysis works on any results file, including ones from envs added later: WebShop's
``search[…]``/``click[…]``, ALFWorld's command verbs, Sokoban's four moves. An action that could
not be parsed from the response at all is ``invalid``; parsed text that fits no rule is
``other``. Actions of any other env are typed by their first word.
"""

from __future__ import annotations

import re

__all__ = ["ACTION_TYPES", "INVALID", "OTHER", "classify_action", "env_family"]

INVALID = "invalid"
"""No action could be extracted from the response."""
OTHER = "other"
"""An action was extracted but fits none of the env's action types."""

ACTION_TYPES: dict[str, tuple[str, ...]] = {
    "webshop": ("search", "click_product", "next", "prev", "back", "click_option",
                "description", "features", "reviews", "buy"),
    "alfworld": ("go", "open", "close", "take", "put", "examine", "heat", "cool", "clean",
                 "slice", "toggle", "inventory", "look", "help"),
    "sokoban": ("up", "down", "left", "right"),
    "other": (),
}

_WEBSHOP_BUTTONS = {
    "back to search": "back",
    "next >": "next",
    "next": "next",
    "< prev": "prev",
    "prev": "prev",
    "buy now": "buy",
    "buy": "buy",
    "description": "description",
    "features": "features",
    "reviews": "reviews",
}
# Amazon-style ids: "B0" + 8 base-36 characters (the generated catalogue's form too), or ISBN-10.
_PRODUCT_ID = re.compile(r"^(?:b0[0-9a-z]{8}|\d{9}[\dx])$")
_WEBSHOP = re.compile(r"^(search|click)\s*\[(.*)\]$", re.S)
_ALFWORLD_VERBS = {
    "go": "go", "open": "open", "close": "close", "take": "take", "pick": "take", "put": "put",
    "move": "put", "examine": "examine", "heat": "heat", "cool": "cool", "clean": "clean",
    "slice": "slice", "use": "toggle", "toggle": "toggle", "inventory": "inventory",
    "look": "look", "help": "help",
}


def env_family(env: str) -> str:
    """``webshop``, ``alfworld``, ``sokoban`` or ``other``, from an env id or name.

    >>> env_family("ARLArena/Sokoban-8x8-2b-v0"), env_family("ARLArena/WebShop-v0")
    ('sokoban', 'webshop')
    """
    name = env.lower()
    for family in ("webshop", "alfworld", "sokoban"):
        if family in name:
            return family
    return "other"


def classify_action(action: object, env: str) -> str:
    """The action type of ``action`` in env ``env`` (an id, a name or a family).

    >>> classify_action("click[B0ABCD1234]", "webshop"), classify_action("click[< Prev]", "webshop")
    ('click_product', 'prev')
    >>> classify_action("heat mug 1 with microwave 1", "alfworld"), classify_action(None, "sokoban")
    ('heat', 'invalid')
    """
    text = " ".join(str(action).lower().split()) if action is not None else ""
    if not text:
        return INVALID
    family = env_family(env)
    if family == "webshop":
        return _webshop(text)
    if family == "alfworld":
        return _ALFWORLD_VERBS.get(text.split(" ", 1)[0], OTHER)
    if family == "sokoban":
        return text if text in ACTION_TYPES["sokoban"] else OTHER
    return text.split(" ", 1)[0][:24]


def _webshop(text: str) -> str:
    match = _WEBSHOP.match(text)
    if match is None:
        return OTHER
    verb, argument = match.group(1), match.group(2).strip()
    if verb == "search":
        return "search" if argument else OTHER
    if argument in _WEBSHOP_BUTTONS:
        return _WEBSHOP_BUTTONS[argument]
    if _PRODUCT_ID.match(argument):
        return "click_product"
    return "click_option" if argument else OTHER
