"""Where ALFWorld's files are: the installed ``alfworld`` package, the game cache, real data.

Holds :func:`alfworld_package_dir` (found without importing ``alfworld``, whose import sets
``ALFWORLD_DATA`` as a side effect), :func:`domain_text`, :func:`grammar_text`,
:func:`layouts_dir`, :func:`cache_dir` (``$ARLARENA_CACHE/alfworld`` or
``~/.cache/arlarena/alfworld``) and :func:`alfworld_data_dir` (the downloaded ALFWorld data).
"""

from __future__ import annotations

import importlib.util
import os
from functools import cache
from pathlib import Path

__all__ = [
    "alfworld_data_dir",
    "alfworld_package_dir",
    "cache_dir",
    "domain_text",
    "grammar_text",
    "layouts_dir",
]


@cache
def alfworld_package_dir() -> Path:
    """Directory of the installed ``alfworld`` package."""
    spec = importlib.util.find_spec("alfworld")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            "alfworld is not installed: pip install alfworld==0.4.2 (it ships the PDDL domain, "
            "grammar and scene layouts ARLArena's ALFWorld games are made from)"
        )
    return Path(spec.origin).parent


@cache
def domain_text() -> str:
    """ALFWorld's PDDL domain (``alfworld/data/alfred.pddl``)."""
    return (alfworld_package_dir() / "data" / "alfred.pddl").read_text(encoding="utf-8")


@cache
def grammar_text() -> str:
    """ALFWorld's TextWorld grammar (``alfworld/data/alfred.twl2``), task still ``UNKNOWN GOAL``."""
    return (alfworld_package_dir() / "data" / "alfred.twl2").read_text(encoding="utf-8")


def layouts_dir() -> Path:
    """ALFRED's scene layouts shipped with ``alfworld`` (``gen/layouts``)."""
    return alfworld_package_dir() / "gen" / "layouts"


def cache_dir() -> Path:
    """Root of ARLArena's ALFWorld cache: ``$ARLARENA_CACHE/alfworld`` or ``~/.cache/arlarena``."""
    root = os.environ.get("ARLARENA_CACHE")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "arlarena"
    return base / "alfworld"


def alfworld_data_dir() -> Path:
    """The downloaded ALFWorld data: ``$ALFWORLD_DATA``, else ALFWorld's own default location."""
    root = os.environ.get("ALFWORLD_DATA")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "alfworld"
