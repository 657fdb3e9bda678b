"""Deterministic random draws keyed by strings, identical on every machine and Python version.

Holds :class:`KeyedRandom`. Python's ``hash()`` is salted per process and only
``random.Random.random()`` has a stream that Python promises to keep, so the key is hashed with
SHA-256 and every draw (``below``, ``choice``, ``shuffle``...) is built on ``random()`` alone.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import TypeVar

__all__ = ["KeyedRandom"]

T = TypeVar("T")


class KeyedRandom:
    """A random stream fixed by a tuple of key parts.

    Example:
        >>> a, b = KeyedRandom("game", "train", 3), KeyedRandom("game", "train", 3)
        >>> [a.below(100) for _ in range(3)] == [b.below(100) for _ in range(3)]
        True
    """

    def __init__(self, *key: object) -> None:
        digest = hashlib.sha256("\x1f".join(map(str, key)).encode("utf-8")).digest()
        self._random = random.Random(int.from_bytes(digest[:16], "big"))

    def random(self) -> float:
        """A float in ``[0, 1)``."""
        return self._random.random()

    def below(self, n: int) -> int:
        """An int in ``[0, n)``."""
        if n <= 0:
            raise ValueError(f"below() needs n > 0, got {n}")
        return min(int(self._random.random() * n), n - 1)

    def uniform(self, low: float, high: float) -> float:
        """A float in ``[low, high)``."""
        return low + (high - low) * self._random.random()

    def choice(self, items: Sequence[T]) -> T:
        """One element of a non-empty sequence."""
        if not items:
            raise IndexError("choice() from an empty sequence")
        return items[self.below(len(items))]

    def weighted(self, items: Sequence[T], weights: Sequence[float]) -> T:
        """One element drawn with the given (positive, unnormalised) weights."""
        if len(items) != len(weights) or not items:
            raise ValueError("weighted() needs as many weights as items, and at least one item")
        point, total = self._random.random() * sum(weights), 0.0
        for item, weight in zip(items, weights, strict=True):
            total += weight
            if point < total:
                return item
        return items[-1]

    def shuffle(self, items: list[T]) -> None:
        """Shuffle ``items`` in place (Fisher-Yates)."""
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]
