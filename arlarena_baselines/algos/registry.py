"""Name → object registries shared by every dimension of the algorithm zoo.

Holds:

- :class:`Registry`: a read-only mapping filled through a decorator, with an error that lists
  the known names and an optional case-insensitive lookup;
- :class:`UnknownNameError`: the ``KeyError`` it raises for a name it does not hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

__all__ = ["Registry", "UnknownNameError"]

T = TypeVar("T")


class UnknownNameError(KeyError):
    """A registry has no entry of that name; the message lists the names it knows."""

    def __str__(self) -> str:
        return str(self.args[0])


class Registry(Mapping[str, T]):
    """A mapping name → object, filled with :meth:`register` (a decorator) or :meth:`add`.

    Lookups of unknown names raise :class:`UnknownNameError` naming the registry's ``kind``
    and every known name, so a typo in a config fails with a useful message.

    >>> losses = Registry("policy loss")
    >>> @losses.register("double")
    ... def double(x):
    ...     return 2 * x
    >>> losses["double"](3)
    6
    >>> "half" in losses
    False
    """

    def __init__(self, kind: str, *, case_sensitive: bool = True) -> None:
        self.kind = kind
        self.case_sensitive = case_sensitive
        self._items: dict[str, T] = {}
        self._canonical: dict[str, str] = {}

    def _key(self, name: str) -> str:
        return name if self.case_sensitive else name.lower()

    def add(self, name: str, obj: T, *, override: bool = False) -> T:
        """Register ``obj`` under ``name``; re-using a name needs ``override=True``."""
        key = self._key(name)
        if key in self._canonical and not override:
            raise ValueError(f"{self.kind} {name!r} is already registered (pass override=True)")
        self._items.pop(self._canonical.get(key, name), None)
        self._canonical[key] = name
        self._items[name] = obj
        return obj

    def register(self, name: str, *, override: bool = False) -> Callable[[T], T]:
        """Decorator form of :meth:`add`."""

        def decorator(obj: T) -> T:
            return self.add(name, obj, override=override)

        return decorator

    def __getitem__(self, name: str) -> T:
        canonical = self._canonical.get(self._key(name)) if isinstance(name, str) else None
        if canonical is None:
            known = ", ".join(self._items)
            raise UnknownNameError(f"unknown {self.kind} {name!r}; known: {known}")
        return self._items[canonical]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self._items)})"
