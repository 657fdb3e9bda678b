"""The code that runs first inside the sandbox (passed to ``python -S -c``): one execution, or a
warm server that forks one per execution.

**One execution** (``-c PRELUDE ANSWER_FD UID AS CPU NPROC FSIZE NOFILE MAX_CHARS PATH...``):
it becomes the uid (dropping the only capabilities it was started with,
``CAP_SETUID``/``CAP_SETGID``), applies the rlimits, installs ``final_answer`` as a builtin, says
``ready`` on the answer fd, then reads the model's code from stdin (the host sends it only
after ``ready``) and runs it as ``__main__``. ``final_answer(x)`` writes ``str(x)`` (cut to the
longest answer, escaped to one line) to the answer fd and stops the program. A traceback shows
only the model's own frames. Only ``os`` and ``resource`` are imported before the code runs, to
keep the start cheap.

**The warm server** (``-c PRELUDE serve CONTROL_FD PRELOAD PATH...``, as root only): it imports
the ``PRELOAD`` modules (comma-separated, e.g. numpy and sympy), says ``ready`` on the control
socket, then serves one execution at a time. A request carries the limits and, as file
descriptors, the run's stdin, stdout, stderr and answer channel. The server forks (the child is
in the server's cgroup, whose limits the host sets for the run), and the child does what one
execution does, its random generators reseeded. When the child exits, or the host says
``kill``, the server kills every other process of its pid namespace (``CAP_KILL``; bwrap's init
and itself excepted), then, as the run's uid, deletes what the run left in ``/tmp`` and its
System V IPC objects, and reports ``exit CODE``; ``exit CODE last`` if anything could not be
removed, after which it exits. A run never shares a process, a file or an IPC object with the
next one. End of file on the control socket ends the server.

Nothing here runs on import, so the module stays importable (and doctest-collectable) on the
host.
"""

from __future__ import annotations

import sys

__all__ = ["main"]

_ANSWER_FD = 3
"""Where a warm child finds its answer channel."""


class _FinalAnswer(BaseException):
    """Raised by ``final_answer`` to end the program (a ``BaseException`` like ``SystemExit``)."""


def main() -> None:
    if sys.argv[1] == "serve":
        control_fd, preload = int(sys.argv[2]), [m for m in sys.argv[3].split(",") if m]
        sys.path.extend(sys.argv[4:])
        del sys.argv[1:]
        _serve(control_fd, preload)
        return
    answer_fd, *config = map(int, sys.argv[1:9])
    sys.path.extend(sys.argv[9:])
    del sys.argv[1:]
    _execute(answer_fd, config)


def _execute(answer_fd: int, config: list[int], relative_memory: bool = False) -> None:
    """Become the run's uid, apply its limits and run the code that arrives on stdin.

    With ``relative_memory`` the address-space limit counts from what the process already maps
    (a warm child, whose preloaded modules the run's cgroup does not charge it for).
    """
    import builtins
    import os
    import resource

    uid, memory, cpu, processes, file_bytes, open_files, max_chars = config
    if uid:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    if relative_memory:
        memory += os.sysconf("SC_PAGE_SIZE") * int(open("/proc/self/statm").read().split()[0])
    for name, soft, hard in (
        ("RLIMIT_AS", memory, memory),
        ("RLIMIT_CPU", cpu, cpu + 1),
        ("RLIMIT_NPROC", processes, processes),
        ("RLIMIT_FSIZE", file_bytes, file_bytes),
        ("RLIMIT_NOFILE", open_files, open_files),
        ("RLIMIT_CORE", 0, 0),
    ):
        resource.setrlimit(getattr(resource, name), (soft, hard))
    answers = os.fdopen(answer_fd, "wb", buffering=0)

    def final_answer(answer: object) -> None:
        """Record ``answer`` as the final answer and stop the program."""
        text = str(answer)[:max_chars]
        try:
            answers.write(b"answer " + text.encode("unicode_escape") + b"\n")
        except (OSError, ValueError):
            pass
        raise _FinalAnswer

    builtins.final_answer = final_answer
    answers.write(b"ready\n")
    code = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(compile(code, "<code>", "exec"), namespace)
    except _FinalAnswer:
        pass
    except SystemExit:
        raise
    except BaseException as error:
        _print_traceback(error, code)
        os._exit(1)


def _print_traceback(error: BaseException, code: str) -> None:
    """Print ``error``'s traceback without the prelude's frame, the code's lines shown."""
    import linecache
    import traceback

    linecache.cache["<code>"] = (len(code), None, code.splitlines(True), "<code>")
    tb = error.__traceback__.tb_next if error.__traceback__ else None
    traceback.print_exception(type(error), error, tb)
    sys.stderr.flush()


# -- the warm server ---------------------------------------------------------------------------
def _serve(control_fd: int, preload: list[str]) -> None:
    import gc
    import json
    import os
    import socket

    for name in preload:
        try:
            __import__(name)
        except Exception:  # the run that imports it sees the error itself
            pass
    gc.collect()
    gc.freeze()  # keep the preloaded objects out of every child's collections
    control = socket.socket(fileno=control_fd)
    control.send(b"ready")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the host stops reading the server's own streams once it is ready
        os.dup2(null, fd)
    os.close(null)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 4096, 5)
        except OSError:
            break
        if not message:
            break
        if message == b"kill":  # for a run that ended as the host gave up on it: done already
            continue
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            control.close()
            _child(fds, request["limits"], request["relative_memory"])
        for fd in fds:
            os.close(fd)
        status, hung_up = _watch(control, pid)
        clean = _clear_run(request["limits"][0])
        if hung_up:
            break
        try:
            control.send(b"exit %d%s" % (status, b"" if clean else b" last"))
        except OSError:
            break
        if not clean:
            break
    os._exit(0)


def _child(fds: list[int], config: list[int], relative_memory: bool) -> None:
    """The forked execution: its streams in place, then the run."""
    import fcntl
    import os

    status = 1
    try:
        os.setsid()
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64) for fd in fds]
        for fd, target in zip(high, (0, 1, 2, _ANSWER_FD), strict=True):
            os.dup2(fd, target)
        os.closerange(_ANSWER_FD + 1, 1 << 16)
        _reseed()
        try:
            _execute(_ANSWER_FD, config, relative_memory)
            status = 0
        except SystemExit as stop:
            status = _exit_status(stop.code)
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()  # what the interpreter's exit waits for
        import atexit

        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
    except BaseException:  # a failure of the set-up, shown to the host
        import traceback

        traceback.print_exc()
        status = 1
    finally:
        os._exit(status)


def _exit_status(code: object) -> int:
    """The exit status ``raise SystemExit(code)`` gives an interpreter."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _reseed() -> None:
    """Fresh entropy for the preloaded generators a fork would otherwise share (``random``
    reseeds itself at fork)."""
    for name, attribute in (("numpy.random", None), ("sympy.core.random", "rng")):
        module = sys.modules.get(name)
        target = getattr(module, attribute, None) if attribute else module
        if target is not None and hasattr(target, "seed"):
            target.seed()


def _watch(control: object, pid: int) -> tuple[int, bool]:
    """Wait for the child to exit or the host to say ``kill`` (or hang up); return the child's
    exit status (``128 + n`` for signal ``n``) and whether the host hung up."""
    import os
    import select
    import signal

    pidfd = os.pidfd_open(pid)
    hung_up = False
    try:
        ready, _, _ = select.select([control, pidfd], [], [])
        if pidfd not in ready:  # the host says kill, or hung up: either way the run ends
            hung_up = not control.recv(64)  # type: ignore[attr-defined]
            os.kill(pid, signal.SIGKILL)
    finally:
        os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return (128 - code if code < 0 else code), hung_up


def _kill_others() -> bool:
    """SIGKILL every process of this pid namespace but init and this one, until none is left
    (zombies count until reaped: this process's children here, the others by bwrap's init)."""
    import os
    import signal
    import time

    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            return True
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        time.sleep(0.0005)
    return False


def _clear_run(uid: int) -> bool:
    """Kill what is left of the run, then, as its uid, delete its files in ``/tmp`` and its
    System V IPC objects; whether nothing of it remains."""
    import os

    if not _kill_others():
        return False
    os.setresuid(-1, uid, -1)  # the run's files and IPC objects are its own to delete
    try:
        for entry in os.scandir("/tmp"):
            try:
                if entry.is_dir(follow_symlinks=False):
                    _delete_tree(entry.path)
                else:
                    os.unlink(entry.path)
            except (OSError, RecursionError):
                pass
        _remove_ipc()
        return not os.listdir("/tmp") and not _ipc_objects()
    except (OSError, RecursionError):
        return False
    finally:
        os.setresuid(-1, 0, -1)


def _delete_tree(top: str) -> None:
    """Delete a directory tree, first opening every directory a run may have locked itself out
    of (deep or odd trees fail; the caller then retires the server)."""
    import os
    import shutil

    stack = [top]
    while stack:
        directory = stack.pop()
        os.chmod(directory, 0o700)
        with os.scandir(directory) as entries:
            stack += [e.path for e in entries if e.is_dir(follow_symlinks=False)]
    shutil.rmtree(top)


_IPC = (("shm", "shmctl"), ("msg", "msgctl"), ("sem", "semctl"))


def _ipc_objects() -> list[tuple[str, int]]:
    """``(kind, id)`` of every System V IPC object of this IPC namespace."""
    found = []
    for kind, _ in _IPC:
        with open(f"/proc/sysvipc/{kind}") as table:
            rows = table.readlines()[1:]
        found += [(kind, int(row.split()[1])) for row in rows if row.strip()]
    return found


def _remove_ipc() -> None:
    objects = _ipc_objects()
    if not objects:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    control = dict(_IPC)
    for kind, number in objects:  # IPC_RMID is 0; semctl takes a semaphore number first
        args = (number, 0, 0) if kind == "sem" else (number, 0, None)
        getattr(libc, control[kind])(*args)


if __name__ == "__main__":
    main()
