"""Results files read together, each episode counted once.

Holds :func:`episode_key`, :func:`load_results` and :func:`mixed_settings`. An episode is the
same episode when its row (agent or label, env), task panel, episode id (task seed and sample)
and settings (the digest of its settings record, :mod:`.settings`) are: the same file given
twice, or a rerun answered from the cache in another folder, adds nothing to a table. A file
given twice is read once; a later copy of an episode is dropped with its turns, and a warning
says how many.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from arlarena_baselines.evaluation.results import read_records, split_label

__all__ = ["episode_key", "load_results", "mixed_settings"]


def _text(value: Any) -> str:
    """``value`` as a string to key on (a hand-edited record may hold anything)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def episode_key(record: dict[str, Any]) -> tuple[str, ...]:
    """What identifies an episode record across files.

    >>> episode_key({"agent": "a", "env": "E", "episode_id": "seed=3/sample=0", "settings": "d"})
    ('a', 'E', 'null', 'seed=3/sample=0', 'd')
    """
    panel = record.get("panel")
    return tuple(_text(part) for part in (
        record.get("agent"), record.get("env"),
        panel.get("name") if isinstance(panel, dict) else None,
        record.get("episode_id"), record.get("settings")))


def load_results(specs: Sequence[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """The records of the ``[LABEL=]PATH`` files ``specs`` (a label renames the agent of every
    record), each episode once, and warnings for what was left out. Raises ``OSError`` for a
    file that cannot be read."""
    records: list[dict[str, Any]] = []
    warnings: list[str] = []
    seen_files: set[Any] = set()
    seen: set[tuple[str, ...]] = set()
    for spec in specs:
        label, path = split_label(spec)
        if path.resolve() in seen_files:
            warnings.append(f"{path} was given more than once: read once")
            continue
        seen_files.add(path.resolve())
        ours = list(read_records(path))
        if label is not None:
            ours = [{**record, "agent": label} for record in ours]
        dropped = set()
        for record in ours:
            if record.get("type") != "episode":
                continue
            key = episode_key(record)
            if key in seen:
                dropped.add(_text(record.get("episode_id")))
            seen.add(key)
        if dropped:
            warnings.append(f"{path}: {len(dropped)} episode(s) already read from another file "
                            "(same agent, env, task, sample and settings) were dropped")
        records += [r for r in ours if r.get("type") not in ("episode", "turn")
                    or _text(r.get("episode_id")) not in dropped]
    return records, warnings


def mixed_settings(records: Iterable[dict[str, Any]]) -> list[str]:
    """A warning per (agent, env) whose episodes ran under more than one settings record
    (a resume with ``--force``, or different runs under one label)."""
    digests: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for record in records:
        if record.get("type") == "episode":
            row = (_text(record.get("agent")), _text(record.get("env")))
            digests[row][_text(record.get("settings"))] += 1
    warnings = []
    for (agent, env), found in digests.items():
        if len(found) > 1:
            counts = ", ".join(f"{'unrecorded' if digest == 'null' else digest}: {n}"
                               for digest, n in found.items())
            warnings.append(f"{agent} on {env}: its episodes ran under {len(found)} different "
                            f"settings ({counts} episodes); its rows mix them")
    return warnings
