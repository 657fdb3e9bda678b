"""Fast Downward's PDDL → SAS translation as TextWorld runs it: memoised, and serialised.

Holds :data:`TEXTWORLD_LOCK` (held around every call into TextWorld or Fast Downward's Python
translator, neither of which is thread-safe: module-level Tatsu parsers, translator options,
``sys.argv``) and :func:`install_translation_cache`.

TextWorld's ``PddlEnv`` translates the game's PDDL twice when it loads a game and twice again on
every ``reset`` (a new ``PddlState`` each time); the translation is a pure function of the
domain and problem text and is ~90 % of the cost of a reset (over a second for a kitchen). The
cache wraps ``fast_downward.pddl2sas`` (the name TextWorld calls) once per process with a small
thread-safe LRU: a new game is translated twice instead of four times and resetting the same
game again translates nothing. Results are returned as the original makes them; TextWorld only
reads them.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Any

__all__ = ["TEXTWORLD_LOCK", "install_translation_cache"]

TEXTWORLD_LOCK = threading.RLock()
"""Serialises TextWorld and Fast Downward's translator across the threads of a process."""


def install_translation_cache(maxsize: int = 8) -> None:
    """Wrap ``fast_downward.pddl2sas`` with an LRU of ``maxsize`` translations (idempotent)."""
    import fast_downward
    import fast_downward.interface as interface

    if getattr(fast_downward.pddl2sas, "arlarena_cache", None) is not None:
        return
    original = interface.pddl2sas
    cache: OrderedDict[tuple[str, str, bool], Any] = OrderedDict()
    lock = threading.Lock()

    @functools.wraps(original)
    def pddl2sas(domain: str, problem: str, verbose: bool = False, optimize: bool = False) -> Any:
        key = (domain, problem, bool(optimize))
        with lock:
            if key in cache:
                cache.move_to_end(key)
                return cache[key]
        result = original(domain, problem, verbose=verbose, optimize=optimize)
        with lock:
            cache[key] = result
            while len(cache) > maxsize:
                cache.popitem(last=False)
        return result

    pddl2sas.arlarena_cache = cache  # type: ignore[attr-defined]
    fast_downward.pddl2sas = pddl2sas
