"""What makes API evaluations cheap to repeat: a response cache on disk and a request budget.

Holds :class:`ResponseCache` (SQLite; :class:`~wrappers.agents.openai_chat.ChatEndpoint` keys
it by endpoint, model, messages and sampling, and above temperature 0 by the episode, turn and
sample too, so a rerun costs nothing while repeated prompts are still sampled afresh),
:func:`cache_key`, and :class:`RequestBudget` (a cap on requests sent, shared by every agent
and debater of a run).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from wrappers.agents.base import BudgetExhausted

__all__ = ["RequestBudget", "ResponseCache", "cache_key"]


def cache_key(**parts: Any) -> str:
    """A stable hex digest of ``parts`` (JSON with sorted keys).

    >>> cache_key(model="m", sample=0) == cache_key(sample=0, model="m")
    True
    >>> cache_key(model="m", sample=0) == cache_key(model="m", sample=1)
    False
    """
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """Responses by key in one SQLite file; safe for threads and for concurrent processes.

    Every ``put`` is committed and synced at once (a killed run, or a power cut, keeps what it
    paid for). ``path`` may be a directory (the file is ``responses.sqlite`` inside) or a file
    path.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     cache = ResponseCache(tmp)
    ...     cache.put("k", {"text": "hi"})
    ...     hit, miss = cache.get("k"), cache.get("other")
    ...     cache.close()
    >>> hit, miss
    ({'text': 'hi'}, None)
    """

    FILE_NAME = "responses.sqlite"

    def __init__(self, path: str | Path) -> None:
        path = Path(path).expanduser()
        if path.is_dir() or not path.suffix:
            path = path / self.FILE_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=60, check_same_thread=False,
                                   isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # each put is on disk when it returns
        self._db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, value TEXT)")

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value of ``key``, or ``None``."""
        with self._lock:
            row = self._db.execute("SELECT value FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` (JSON-serialisable) under ``key``, replacing an older value."""
        blob = json.dumps(value, ensure_ascii=False)
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?)", (key, blob))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


class RequestBudget:
    """At most ``limit`` requests sent (``None``: no limit); :meth:`take` one before each.

    >>> budget = RequestBudget(1)
    >>> budget.take(); budget.spent
    1
    >>> budget.take()
    Traceback (most recent call last):
    wrappers.agents.base.BudgetExhausted: the request budget of 1 is spent
    """

    def __init__(self, limit: int | None = None) -> None:
        if limit is not None and limit < 0:
            raise ValueError(f"the request budget must be >= 0, got {limit}")
        self.limit = limit
        self.spent = 0
        self._lock = threading.Lock()

    def take(self) -> None:
        """Count one request, or raise :class:`BudgetExhausted` when none are left."""
        with self._lock:
            if self.limit is not None and self.spent >= self.limit:
                raise BudgetExhausted(f"the request budget of {self.limit} is spent")
            self.spent += 1
