"""Where WebShop keeps its caches, how cache keys are made, and a pickle cache for built data.

Holds :func:`cache_dir` (``$ARLARENA_CACHE/webshop`` or ``~/.cache/arlarena/webshop``),
:func:`cache_key` (a short SHA-256 of JSON-encoded parameters: stable across processes and
machines, unlike ``hash()``) and :func:`cached_pickle` (load a value this package pickled
earlier, else build and save it: a 100k-product catalogue loads in a fraction of the time it
takes to generate). Only files this package wrote are read; a file that fails to load is
rebuilt.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["CACHE_ENV_VAR", "cache_dir", "cache_key", "cached_pickle"]

T = TypeVar("T")

CACHE_ENV_VAR = "ARLARENA_CACHE"


def cache_dir() -> Path:
    """The WebShop cache folder (not created here)."""
    root = os.environ.get(CACHE_ENV_VAR)
    base = Path(root) if root else Path.home() / ".cache" / "arlarena"
    return base / "webshop"


def cache_key(params: dict[str, Any]) -> str:
    """16 hex digits identifying ``params`` (JSON-able, keys sorted).

    >>> cache_key({"products": 1000, "seed": 0}) == cache_key({"seed": 0, "products": 1000})
    True
    """
    blob = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def cached_pickle(path: Path, build: Callable[[], T]) -> T:
    """The value pickled at ``path``, else ``build()`` saved there (atomically) and returned."""
    if path.exists():
        paused = gc.isenabled()
        gc.disable()  # unpickling many small objects: collection passes would dominate
        try:
            with path.open("rb") as handle:
                return pickle.load(handle)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
            pass  # unreadable or stale: rebuild below
        finally:
            if paused:
                gc.enable()
    value = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(staging, path)
    except OSError:
        Path(staging).unlink(missing_ok=True)
    return value
