"""SIGTERM stops a long command as Ctrl-C does.

Holds :class:`Interrupted` (the ``KeyboardInterrupt`` a signal raises, with its number) and
:func:`terminate_as_interrupt`. ``arlarena eval`` and ``arlarena arena`` run under it, so that
``kill`` (or a scheduler's stop) lets them keep what they have written, release their lock and
stop their worker processes, where SIGTERM's default would end the process at once and leave its
workers running.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Interrupted", "terminate_as_interrupt"]


class Interrupted(KeyboardInterrupt):
    """A signal stopped the run (SIGTERM; Ctrl-C raises ``KeyboardInterrupt`` itself)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While in the block, SIGTERM raises :class:`Interrupted` in the main thread (elsewhere
    signals are left alone: only the main thread may set a handler)."""
    def stop(signum: int, _: Any) -> None:
        raise Interrupted(signum)

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
