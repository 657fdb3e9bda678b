"""Results as JSONL, written as the run goes and safe to resume.

Every turn is one ``{"type": "turn", ...}`` line and every finished episode one
``{"type": "episode", ...}`` line, flushed at once. :func:`prepare_resume` keeps exactly the lines
of finished episodes (a torn last line from a killed run is dropped), so a resumed run redoes only
the episodes that were in flight or ended with an ``error``, and never duplicates one.

A record always writes: its text is kept exactly (JSON escapes control characters, NUL
included), except for lone surrogates, which UTF-8 cannot encode (an OpenAI-compatible server
can send ``\\ud800`` in JSON): they become U+FFFD, and split surrogate pairs are joined
(:func:`arlarena_envs.base.repair_surrogates`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from arlarena_envs.base import repair_surrogates

__all__ = ["ResultsWriter", "prepare_resume", "read_labelled", "read_records"]


def read_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the JSON records of ``path``, skipping a torn (incomplete) last line and any line
    that is not a JSON object."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.endswith("\n"):
                break
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                yield record


def read_labelled(spec: str) -> list[dict[str, Any]]:
    """The records of ``[LABEL=]PATH``; with a label, every record's ``agent`` becomes it.

    Labels name result files by method (``GiGPO=results/a.jsonl``) in reports and analyses.
    A path that itself contains ``=`` and exists is read as a path.
    """
    label, eq, path = spec.partition("=")
    if not eq or not label or Path(spec).exists():
        return list(read_records(spec))
    return [{**record, "agent": label} for record in read_records(path)]


def prepare_resume(path: str | Path) -> set[str]:
    """Drop the lines of unfinished or failed episodes from ``path``; return the finished ids.

    An episode that ended with an ``error`` (e.g. the server answered garbage) counts as
    unfinished, so resuming runs it again.

    The file is rewritten atomically (temporary file + rename), so a crash here loses nothing.
    """
    path = Path(path)
    if not path.exists():
        return set()
    records = list(read_records(path))
    done = {r["episode_id"] for r in records if r.get("type") == "episode" and not r.get("error")}
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for record in records:
            if record.get("episode_id") in done:
                handle.write(_line(record))
    os.replace(tmp, path)
    return done


class ResultsWriter:
    """Appends records to a JSONL file, one flushed line each."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle: IO[str] = open(self.path, "a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._handle.write(_line(record))
        self._handle.flush()

    def write_all(self, records: Iterable[dict[str, Any]]) -> None:
        for record in records:
            self.write(record)

    def close(self) -> None:
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
