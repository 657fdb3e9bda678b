"""The bounds of a config's numeric fields, declared on the field, checked in one place.

Holds :func:`bounded` (a dataclass field whose metadata carries its bounds),
:func:`check_bounds` (a one-line ``ValueError`` for the first field out of them) and
:class:`Bounded` (a dataclass base that checks them on construction and ``replace``). Every config
dataclass a command builds (the trainer's sections, an evaluation) declares its bounds with
:func:`bounded`, so the CLI, the dry runs and the Python API refuse the same values before any
work starts (``--steps 0``, ``--rollout.group_size 0``, ``--episodes -5``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

__all__ = ["Bounded", "bounded", "check_bounds"]


def bounded(default: Any = dataclasses.MISSING, *, ge: float | None = None,
            gt: float | None = None, le: float | None = None, **kwargs: Any) -> Any:
    """A dataclass field with ``default`` whose value (unless ``None``) must be ``>= ge``,
    ``> gt`` and ``<= le``."""
    limits = {k: v for k, v in (("ge", ge), ("gt", gt), ("le", le)) if v is not None}
    return dataclasses.field(default=default, metadata={"bounds": limits}, **kwargs)


_WORDS = {"ge": ">=", "gt": ">", "le": "<="}


def check_bounds(config: Any, prefix: str = "") -> None:
    """Raise ``ValueError`` naming the first field of dataclass ``config`` out of its bounds
    (``prefix`` goes before the field's name: ``rollout.``; ``--`` names it as a flag).

    >>> @dataclasses.dataclass
    ... class C:
    ...     steps: int = bounded(1, ge=1)
    >>> check_bounds(C(0), "rl.")
    Traceback (most recent call last):
    ...
    ValueError: rl.steps must be >= 1, got 0
    """
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        limits = f.metadata.get("bounds", {})
        if value is None or not limits or isinstance(value, bool):
            continue
        for kind, limit in limits.items():
            ok = {"ge": value >= limit, "gt": value > limit, "le": value <= limit}[kind]
            if not ok:
                optional = " or null" if f.default is None else ""
                name = f.name.replace("_", "-") if prefix == "--" else f.name
                raise ValueError(f"{prefix}{name} must be {_WORDS[kind]} {limit}{optional}, "
                                 f"got {value}")


class Bounded:
    """Base of a dataclass whose :func:`bounded` fields are checked whenever one is made
    (``replace`` too); :attr:`prefix` names its fields in the error."""

    prefix: ClassVar[str] = ""

    def __post_init__(self) -> None:
        check_bounds(self, self.prefix)
