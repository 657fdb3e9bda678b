"""Results as JSONL, written as the run goes and safe to resume.

Every turn is one ``{"type": "turn", ...}`` line and every finished episode one
``{"type": "episode", ...}`` line, flushed at once; a ``settings`` record says what produced them
(:mod:`.settings`) and ``spend`` records what API agents spent (:mod:`.spending`).

The resume rule lives here alone: an episode is finished when its ``episode`` record has no
``error`` (:func:`finished_ids`); a resume plays every other one again (:func:`still_to_play`).
:func:`prepare_resume` keeps the run records and the lines of finished episodes (a torn last line
from a killed run is dropped), so a resumed run redoes only the episodes that were in flight or
ended with an ``error``, and never duplicates one.

A record always writes: its text is kept exactly (JSON escapes control characters, NUL
included), except for lone surrogates, which UTF-8 cannot encode (an OpenAI-compatible server
can send ``\\ud800`` in JSON): they become U+FFFD, and split surrogate pairs are joined
(:func:`arlarena_envs.base.repair_surrogates`).
"""

from __future__ import annotations

import gzip
import json
import os
import threading
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from arlarena_envs.base import repair_surrogates

if TYPE_CHECKING:
    from arlarena_baselines.rollout.episodes import Start

__all__ = [
    "ResultsWriter",
    "append_records",
    "finished_ids",
    "prepare_resume",
    "read_records",
    "split_label",
    "still_to_play",
]

RUN_RECORDS = ("settings", "spend")
"""Record types that describe a run, not an episode: a resume keeps them all."""


def read_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the JSON records of ``path`` (gzip-compressed where it ends in ``.gz``, as the
    committed evidence of ``make learn`` is), skipping a torn (incomplete) last line, or the
    torn end of a compressed file, and any line that is not a JSON object."""
    opener = gzip.open if Path(path).suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        try:
            for line in handle:
                if not line.endswith("\n"):
                    break
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(record, dict):
                    yield record
        except (EOFError, gzip.BadGzipFile, zlib.error):
            return


def split_label(spec: str) -> tuple[str | None, Path]:
    """``(LABEL, PATH)`` of ``[LABEL=]PATH`` (no label: ``None``); a path that itself contains
    ``=`` and exists is a path. Labels name result files by method (``GiGPO=results/a.jsonl``)
    in reports and analyses.

    >>> split_label("GiGPO=results/a.jsonl")
    ('GiGPO', PosixPath('results/a.jsonl'))
    """
    label, eq, path = spec.partition("=")
    if not eq or not label or Path(spec).exists():
        return None, Path(spec)
    return label, Path(path)


def finished_ids(records: Iterable[dict[str, Any]]) -> set[str]:
    """The ids of the episodes that ``records`` finish: an ``episode`` record without an
    ``error`` (one that ended with an error is run again).

    >>> sorted(finished_ids([{"type": "episode", "episode_id": "a", "error": None},
    ...                      {"type": "episode", "episode_id": "b", "error": "500"}]))
    ['a']
    """
    return {r["episode_id"] for r in records
            if r.get("type") == "episode" and not r.get("error") and "episode_id" in r}


def still_to_play(starts: Sequence[Start], done: set[str]) -> list[Start]:
    """The episodes of ``starts`` that a resume plays: those whose id is not in ``done``
    (:func:`finished_ids`)."""
    return [start for start in starts if start.id not in done]


def prepare_resume(path: str | Path) -> set[str]:
    """Drop the lines of unfinished or failed episodes from ``path`` (run records stay);
    return the finished ids.

    An episode that ended with an ``error`` (e.g. the server answered garbage) counts as
    unfinished, so resuming runs it again.

    The file is rewritten atomically (temporary file + rename), so a crash here loses nothing.
    """
    path = Path(path)
    if not path.exists():
        return set()
    records = list(read_records(path))
    done = finished_ids(records)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for record in records:
            if record.get("episode_id") in done or record.get("type") in RUN_RECORDS:
                handle.write(_line(record))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return done


def append_records(path: str | Path, records: Iterable[dict[str, Any]]) -> None:
    """Append ``records`` to ``path`` (nothing when there are none)."""
    records = list(records)
    if records:
        with ResultsWriter(path) as writer:
            writer.write_all(records)


class ResultsWriter:
    """Appends records to a JSONL file, one flushed line each (safe for threads: an API
    agent's workers write what they spend as it happens)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle: IO[str] = open(self.path, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = _line(record)
        with self._lock:
            self._handle.write(line)
            self._handle.flush()

    def write_all(self, records: Iterable[dict[str, Any]]) -> None:
        for record in records:
            self.write(record)

    def close(self) -> None:
        with self._lock:
            self._handle.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _line(record: dict[str, Any]) -> str:
    """``record`` as one JSONL line that UTF-8 can always encode."""
    return repair_surrogates(json.dumps(record, ensure_ascii=False, default=_jsonable)) + "\n"


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
