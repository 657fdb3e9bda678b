"""Results files read together, each episode counted once.

Holds :func:`episode_key`, :func:`load_results`, :func:`per_setting` and
:func:`mixed_settings`. An episode is the same episode when its row (agent or label, env), task
panel, episode id (task seed and sample) and settings (the digest of its settings record,
:mod:`.settings`) are: the same file given twice, a file copied into itself (``cat F F``) or
under another name, or a rerun answered from the cache in another folder, adds nothing to a
table. A file given twice is read once; a later copy of an episode is dropped with its turns,
and a warning says how many. A spend record is the same when its run and number are, so a
copied file adds nothing to the spending either. Results of one agent under several settings
get a row per setting (:func:`per_setting`) unless merging is asked for.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from arlarena_baselines.evaluation.results import read_records, split_label
from arlarena_baselines.evaluation.settings import flat_settings

__all__ = ["episode_key", "load_results", "mixed_settings", "per_setting"]


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


def _copy_key(record: dict[str, Any]) -> tuple[str, ...] | None:
    """What makes a record a copy of another, in any file: an episode's :func:`episode_key`, a
    spend record's run and number (older ones: its whole text); ``None`` for the others (a
    turn is a copy when its episode is, or when its file repeats it)."""
    kind = record.get("type")
    if kind == "episode":
        return ("episode", *episode_key(record))
    if kind == "spend":
        if "run" in record and "seq" in record:
            return ("spend", _text(record["run"]), _text(record["seq"]))
        return ("spend", _text(record))
    return None


def load_results(specs: Sequence[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """The records of the ``[LABEL=]PATH`` files ``specs`` (a label renames the agent of every
    record), each episode and each spend record once, and warnings for what was left out: a
    file given twice is read once; an episode already read (from another file, or earlier in
    the same file, as ``cat F F`` makes) is dropped with its turns. Raises ``OSError`` for a
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
        copied: set[str] = set()  # episodes of this file read from another
        repeated = 0
        turns: set[tuple[str, ...]] = set()
        first: set[str] = set()  # episodes this file has given once
        kept = []
        for record in ours:
            key = _copy_key(record)
            episode = _text(record.get("episode_id"))
            if record.get("type") == "turn":
                turn = (_text(record.get("agent")), _text(record.get("env")), episode,
                        _text(record.get("step")))
                if episode in copied or turn in turns:
                    continue
                turns.add(turn)
            elif key is not None and key in seen:
                if record.get("type") == "episode":
                    repeated += episode in first
                    if episode not in first:
                        copied.add(episode)
                continue
            elif key is not None:
                seen.add(key)
                if record.get("type") == "episode":
                    first.add(episode)
            kept.append(record)
        if copied:
            warnings.append(f"{path}: {len(copied)} episode(s) already read from another file "
                            "(same agent, env, task, sample and settings) were dropped")
        if repeated:
            warnings.append(f"{path}: {repeated} episode(s) it holds more than once were read "
                            "once")
        records += [r for r in kept if r.get("type") != "turn"
                    or _text(r.get("episode_id")) not in copied]
    return records, warnings


def per_setting(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` with the agent of each episode named after its settings wherever one agent
    on one env ran under several settings records (a resume with ``--force``, runs at two
    temperatures or endpoints under one label), so that each setting gets its own rows, pass@k
    included. The name adds the settings that differ, as the settings records hold them
    (``openai:m [agent.sampling.temperature=0.4]``; more than three: the digest)."""
    saved = {_text(r.get("digest")): r for r in records if r.get("type") == "settings"}
    digests: dict[tuple[str, str], set[str]] = defaultdict(set)
    for record in records:
        if record.get("type") == "episode":
            digests[(_text(record.get("agent")), _text(record.get("env")))].add(
                _text(record.get("settings")))
    names: dict[tuple[str, str, str], str] = {}
    for (agent, env), found in digests.items():
        if len(found) > 1:
            for digest, label in _setting_labels(sorted(found), saved).items():
                names[(agent, env, digest)] = f"{agent} [{label}]"
    if not names:
        return records
    renamed = []
    for record in records:
        key = (_text(record.get("agent")), _text(record.get("env")),
               _text(record.get("settings")))
        if record.get("type") == "episode" and key in names:
            record = {**record, "agent": names[key]}
        renamed.append(record)
    return renamed


def _setting_labels(digests: list[str], saved: dict[str, dict[str, Any]]) -> dict[str, str]:
    """A label per settings digest: the settings in which their records differ."""
    flat = {d: flat_settings(saved[d]) for d in digests if d in saved}
    keys = sorted({k for f in flat.values() for k in f
                   if len({json.dumps(g.get(k), sort_keys=True) for g in flat.values()}) > 1})
    labels = {}
    for digest in digests:
        if digest not in flat:
            labels[digest] = ("settings unrecorded" if digest == "null"
                              else f"settings {digest}")
        elif not keys or len(keys) > 3:
            labels[digest] = f"settings {digest}"
        else:
            labels[digest] = ", ".join(f"{k}={json.dumps(flat[digest].get(k))}" for k in keys)
    return labels


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
