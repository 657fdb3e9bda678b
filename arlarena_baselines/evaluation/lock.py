"""Exclusive locks on files, so two processes never write the same results at once.

Holds :func:`held`: an advisory lock (``flock``) on a lock file, taken without waiting. The
system drops it when its holder ends, however it ends, so a killed run leaves none behind.
``arlarena eval`` holds one per results file (``F.lock`` beside ``F``), ``arlarena arena`` one per
arena folder.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["FileBusy", "held", "lock_path"]


class FileBusy(RuntimeError):
    """Another process holds the lock."""


def lock_path(path: str | Path) -> Path:
    """The lock file of results file ``path``: ``path`` with ``.lock`` added."""
    path = Path(path)
    return path.with_name(path.name + ".lock")


@contextmanager
def held(path: str | Path, busy: str, error: type[Exception] = FileBusy) -> Iterator[None]:
    """Hold the lock file ``path`` (created if need be) while in the block; when another
    process holds it, raise ``error`` at once with ``busy`` and the holder's process id.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp, held(f"{tmp}/x.lock", "busy"):
    ...     with held(f"{tmp}/x.lock", "x is busy"):
    ...         pass
    Traceback (most recent call last):
    arlarena_baselines.evaluation.lock.FileBusy: x is busy (process ...)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise error(f"{busy} (process {holder})") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield  # closing the file releases the lock
