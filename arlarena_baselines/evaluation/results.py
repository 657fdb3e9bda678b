"""Results as JSONL, written as the run goes and safe to resume.

Every turn is one ``{"type": "turn", ...}`` line and every finished episode one
``{"type": "episode", ...}`` line, flushed at once. :func:`prepare_resume` keeps exactly the lines
of finished episodes (a torn last line from a killed run is dropped), so a resumed run redoes only
the episode that was in flight and never duplicates one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["ResultsWriter", "prepare_resume", "read_records"]


def read_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the JSON records of ``path``, skipping a torn (incomplete) line."""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                break
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def prepare_resume(path: str | Path) -> set[str]:
    """Drop the lines of unfinished episodes from ``path``; return the finished episode ids.

    The file is rewritten atomically (temporary file + rename), so a crash here loses nothing.
    """
    path = Path(path)
    if not path.exists():
        return set()
    records = list(read_records(path))
    done = {r["episode_id"] for r in records if r.get("type") == "episode"}
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for record in records:
            if record.get("episode_id") in done:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    return done


class ResultsWriter:
    """Appends records to a JSONL file, one flushed line each."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle: IO[str] = open(self.path, "a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._handle.write(json.dumps(record, ensure_ascii=False, default=_jsonable) + "\n")
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


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
