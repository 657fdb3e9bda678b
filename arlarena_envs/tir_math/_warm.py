"""Warm sandboxes: bwrap namespaces whose interpreter forks one execution per request.

Holds :class:`Zygote` (one warm server: ``request``, ``kill_run``, ``read_exit``, ``close``) and
:func:`pool` (the process-wide pool of idle servers for one set of bwrap options). The server
side is :func:`arlarena_envs.tir_math._prelude._serve` (the prelude's module docstring gives
the protocol); every server joins this process's user namespace
(:func:`arlarena_envs.tir_math._uids.user_namespace`).

Servers are shared by every :class:`~arlarena_envs.tir_math.sandbox.Sandbox` of the process
with the same layout, ``/tmp`` size and preload; the pool grows to the number of executions
that run at once (keeping at most :data:`MAX_IDLE` idle, some 70 MB each with numpy and sympy),
and each server serves one execution at a time. A server ends when its
control socket closes (at :meth:`Zygote.close`, at exit) and with this process, however it dies
(bwrap's ``--die-with-parent``, which follows the thread that started bwrap: servers are started
from one thread that lasts as long as the process).
A forked child of this process (a ``fork`` worker) starts with no servers: its copies of the
parent's control sockets are closed, so parent and child never talk to the same server.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from arlarena_envs.tir_math._cgroup import CgroupLimits, RunCgroup

__all__ = ["MAX_IDLE", "Zygote", "ZygoteError", "ZygotePool", "pool"]

_START_TIMEOUT_S = 60.0
"""How long a server may take to import its preload, and a run's interpreter to be ready for
its code before its wall time counts (seconds; a loaded machine is slow)."""
_KILL_TIMEOUT_S = 5.0
"""How long a server may take to end a run it was told to kill."""
MAX_IDLE = max(4, os.cpu_count() or 1)
"""The most idle servers a pool keeps; one released beyond them is ended."""


class ZygoteError(RuntimeError):
    """A warm server failed to start or broke off (the caller reports it as a sandbox error)."""


class Zygote:
    """One warm server (see the module docs)."""

    def __init__(self, argv: Sequence[str], pass_fds: Sequence[int], control: socket.socket,
                 child_end: socket.socket, admit: Callable[[], None],
                 cgroup: RunCgroup | None = None) -> None:
        """Start ``argv`` (bwrap, ending in the prelude's ``serve``), call ``admit`` (which closes
        this process's copies of ``pass_fds`` and, with ``cgroup``, moves the sandbox into it)
        and wait until the server is ready. ``child_end``, the server's end of ``control``, is
        passed to it and closed here; ``cgroup`` is the server's for its life.
        """
        self.control = control
        self.cgroup = cgroup
        self.last = False
        self._limits: CgroupLimits | None = None
        self._oom_kills_at_close: int | None = None
        _ALL.add(self)
        try:  # bwrap's --die-with-parent follows the thread that starts it: a lasting one
            self.process = _SPAWNER.submit(
                subprocess.Popen, list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, pass_fds=[*pass_fds, child_end.fileno()],
                start_new_session=True, env={"PATH": "/usr/local/bin:/usr/bin:/bin"}, cwd="/",
            ).result()
        finally:
            child_end.close()
        assert self.process.stderr is not None
        try:
            admit()
        except BaseException:
            self.close()
            raise
        ready = self._receive(_START_TIMEOUT_S)
        if ready != b"ready":
            error = self.process.stderr.read(4000).decode(errors="replace").strip()
            self.close()
            raise ZygoteError(f"the warm sandbox failed to start: {error or 'no reply'}")
        self.process.stderr.close()
        self.baseline = cgroup.usage() if cgroup is not None else 0
        # the server's processes, not the next run's, made ahead: that one is the run's own
        self.base_tasks = cgroup.tasks() - 1 if cgroup is not None else 0

    def bound(self, memory_bytes: int, max_processes: int, cpu_cores: float) -> None:
        """Limit the next run to ``memory_bytes`` beyond what the server holds (and as much of
        socket buffers), ``max_processes`` beside the server's own, and ``cpu_cores``."""
        limits = CgroupLimits(self.baseline + memory_bytes, memory_bytes,
                              self.base_tasks + max_processes, cpu_cores)
        if self.cgroup is not None and limits != self._limits:
            self.cgroup.set_limits(limits)
            self._limits = limits

    def oom_kills(self) -> int:
        """Processes of this server's cgroup killed so far for going over its memory (counted
        until the server ends, also when the kernel's choice was one of the server's own)."""
        if self._oom_kills_at_close is not None:
            return self._oom_kills_at_close
        return self.cgroup.oom_kills() if self.cgroup is not None else 0

    def alive(self) -> bool:
        return not self.last and self.process.poll() is None

    def request(self, request: dict, fds: Sequence[int]) -> None:
        """Start one execution: ``request`` (limits) and the run's fds, in the prelude's order."""
        try:
            socket.send_fds(self.control, [json.dumps(request).encode()], list(fds))
        except OSError as error:
            self.last = True
            raise ZygoteError(f"the warm sandbox is gone: {error}") from None

    def read_exit(self, timeout: float) -> int | None:
        """The run's exit status once the server reports it (every process of the run gone),
        or ``None`` if it did not within ``timeout`` (the run goes on: ``kill_run`` ends it and
        keeps the server) or the server broke off (it is then retired)."""
        message = self._receive(timeout)
        if message is None:
            return None
        if not message.startswith(b"exit "):
            self.last = True
            return None
        return int(message.split()[1])

    def kill_run(self) -> int | None:
        """End the running execution; its exit status, or ``None`` (the server is then ended)."""
        try:
            self.control.send(b"kill")
        except OSError:
            self.last = True
        code = None if self.last else self.read_exit(_KILL_TIMEOUT_S)
        if code is None:
            self.close()
        return code

    def close(self) -> None:
        """End the server: its control socket closes, then, if it lingers, its whole session."""
        self.last = True
        self.control.close()
        try:
            self.process.wait(timeout=_KILL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.process.wait()
        if self.process.stderr and not self.process.stderr.closed:
            self.process.stderr.close()
        if self.cgroup is not None and self._oom_kills_at_close is None:
            self._oom_kills_at_close = self.cgroup.oom_kills()  # read before the cgroup goes
            self.cgroup.remove()

    def _receive(self, timeout: float) -> bytes | None:
        """The server's next message; ``b""`` if it broke off, ``None`` if it said nothing
        within ``timeout``."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if select.select([self.control], [], [], left)[0]:
                try:
                    return self.control.recv(256)
                except OSError:
                    return b""
        return None


class ZygotePool:
    """Idle servers of one kind, started with ``spawn`` when none is idle."""

    def __init__(self, spawn: Callable[[], Zygote]) -> None:
        self._spawn = spawn
        self._idle: list[Zygote] = []
        self._lock = threading.Lock()

    def acquire(self) -> Zygote:
        with self._lock:
            while self._idle:
                zygote = self._idle.pop()
                if zygote.alive():
                    return zygote
                zygote.close()
        return self._spawn()

    def release(self, zygote: Zygote) -> None:
        """Return ``zygote`` to the pool, or end it if it cannot serve again."""
        with self._lock:
            keep = zygote.alive() and len(self._idle) < MAX_IDLE
            if keep:
                self._idle.append(zygote)
        if not keep:
            zygote.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for zygote in idle:
            zygote.close()

    def forget(self) -> None:
        """Empty the pool without ending its servers (they are another process's)."""
        self._lock = threading.Lock()
        self._idle = []


_SPAWNER = ThreadPoolExecutor(1, thread_name_prefix="arlarena-sandbox-spawner")
"""The one thread that starts servers, alive as long as the process."""
_POOLS: dict[tuple, ZygotePool] = {}
_POOLS_LOCK = threading.Lock()
_ALL: weakref.WeakSet[Zygote] = weakref.WeakSet()


def pool(key: tuple, spawn: Callable[[], Zygote]) -> ZygotePool:
    """The process-wide pool of servers started by ``spawn`` for ``key`` (their options)."""
    with _POOLS_LOCK:
        if key not in _POOLS:
            _POOLS[key] = ZygotePool(spawn)
        return _POOLS[key]


@atexit.register
def _close_pools() -> None:
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
    for each in pools:
        each.close()


def _forget_after_fork() -> None:
    """In a forked child: drop the parent's servers without telling them anything."""
    global _POOLS_LOCK, _SPAWNER
    _POOLS_LOCK = threading.Lock()
    _SPAWNER = ThreadPoolExecutor(1, thread_name_prefix="arlarena-sandbox-spawner")
    for zygote in list(_ALL):
        zygote.last = True
        zygote.control.close()
    for each in _POOLS.values():
        each.forget()


os.register_at_fork(after_in_child=_forget_after_fork)
