"""The uids sandboxed code runs as.

Holds :data:`UID_RANGE`, :func:`draw_uid` (a random uid of the range that no user or group of
the host has, as its name services know them: the range is where directory services allocate
too) and :func:`user_namespace` (:class:`UserNamespace`, the one warm servers join).

The user namespace is made once per process, by a short-lived helper that unshares one, into
which the host (root) writes the maps: the namespace's root is a uid drawn like a run's, and
the rest of the range maps to itself, so a run's uid reads the same inside and on the host. The
host owns the namespace, so a warm server (a process of the host's uid 0 without any
capability) may join it, and has every capability there, over the namespaces it then makes,
and none over the host's.
"""

from __future__ import annotations

import grp
import os
import pwd
import secrets
import subprocess
import sys
import threading
from collections.abc import Container
from dataclasses import dataclass

__all__ = ["UID_RANGE", "UserNamespace", "draw_uid", "user_namespace"]

UID_RANGE = (1_000_000, 1_000_000_000)
"""Where runs' uids (and a warm server's) are drawn from, ``[low, high)``."""

_UNSHARE = ("import ctypes, sys\nif ctypes.CDLL(None).unshare(0x10000000) == 0:\n"
            "    sys.stdout.write('u')\n    sys.stdout.flush()\nsys.stdin.read()")


def draw_uid(exclude: Container[int] = ()) -> int:
    """A random uid of :data:`UID_RANGE`, not in ``exclude``, that names no user or group."""
    low, high = UID_RANGE
    while True:
        uid = low + secrets.randbelow(high - low)
        if uid not in exclude and not _known(uid):
            return uid


def _known(uid: int) -> bool:
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(uid)
        except KeyError:
            continue
        return True
    return False


@dataclass(frozen=True)
class UserNamespace:
    """A user namespace warm servers join: ``fd`` (open for the process's life) and ``root``,
    the host uid its root maps to."""

    fd: int
    root: int


_MADE: list[UserNamespace] = []
_LOCK = threading.Lock()


def user_namespace() -> UserNamespace:
    """This process's user namespace for warm servers, made on first use.

    Raises:
        OSError: if no user namespace can be made here.
    """
    with _LOCK:
        if not _MADE:
            _MADE.append(_make())
        return _MADE[0]


def _make() -> UserNamespace:
    root = draw_uid()
    low, high = UID_RANGE
    spans = [(0, root, 1), (low, low, root - low), (root + 1, root + 1, high - root - 1)]
    table = "".join(f"{inside} {outside} {count}\n" for inside, outside, count in spans if count)
    helper = subprocess.Popen([sys.executable, "-S", "-c", _UNSHARE], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    assert helper.stdin is not None and helper.stdout is not None
    try:
        if helper.stdout.read(1) != b"u":
            raise OSError("no user namespace can be made here (unshare(CLONE_NEWUSER) failed)")
        for name in ("uid_map", "gid_map"):  # each map in one write, as the kernel wants it
            fd = os.open(f"/proc/{helper.pid}/{name}", os.O_WRONLY)
            try:
                os.write(fd, table.encode())
            finally:
                os.close(fd)
        return UserNamespace(os.open(f"/proc/{helper.pid}/ns/user", os.O_RDONLY), root)
    finally:
        helper.stdin.close()
        helper.stdout.close()
        helper.wait()
