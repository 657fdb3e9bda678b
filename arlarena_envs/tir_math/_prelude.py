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

**The warm server** (``-c PRELUDE serve CONTROL_FD USERNS_FD TMP_BYTES PRELOAD PATH...``, as
root only): it first joins the user namespace ``USERNS_FD`` (which the host made and owns, so
its root needs no capability of the host's to join) and becomes its root: a host uid of its
own, with capabilities over that namespace's objects only, and an empty bounding set (before,
with the ``CAP_SYS_ADMIN`` bwrap left it, it mounts a procfs: see :func:`_serve`). It
imports the ``PRELOAD`` modules (comma-separated, e.g. numpy and sympy) and becomes, by a fork,
the init of a pid namespace and a mount namespace of its own, mounts that pid namespace's
procfs on ``/proc`` (:func:`_mount_proc`), says ``ready`` on the control socket and serves
one execution at a time. Each run's process is made ahead: forked at a random pid (so that no
run chooses the next one's), it takes mount, network, IPC and cgroup namespaces of its own (a
``/tmp`` of ``TMP_BYTES``, its own loopback, up) and waits for its request. A request carries
the limits and, as file descriptors, the run's stdin, stdout, stderr and answer channel; the
server hands it over, and the run's process (in the server's cgroup, whose limits the host sets
for the run) does what one execution does, its random generators reseeded. When it exits, or
the host says ``kill``, the server kills and reaps every other process of its pid namespace (all
the run's: they come to the init), and the run's namespaces go with them: its files, sockets,
System V and POSIX IPC objects. The server reports ``exit CODE`` and makes the next run's
process. It never reads what a run leaves (no file name, no IPC object), so nothing of a run is
in the memory the next run is forked from. End of file on the control socket ends the server.

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
        control_fd, userns_fd, tmp_bytes = map(int, sys.argv[2:5])
        preload = [m for m in sys.argv[5].split(",") if m]
        sys.path.extend(sys.argv[6:])
        del sys.argv[1:]
        _serve(control_fd, userns_fd, tmp_bytes, preload)
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
_NEWNS, _NEWCGROUP, _NEWIPC, _NEWUSER, _NEWPID, _NEWNET = (
    0x00020000, 0x02000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = (
    1, 2, 4, 8, 32, 1 << 12, 1 << 14, 1 << 18)
_PROC_FLAGS = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
_PR_CAPBSET_DROP = 24


def _serve(control_fd: int, userns_fd: int, tmp_bytes: int, preload: list[str]) -> None:
    """Join the host's user namespace as its root, import ``preload`` and fork the server
    proper, the init of a pid namespace of its own (see the module docs)."""
    import gc
    import os

    # with the one capability bwrap left it (CAP_SYS_ADMIN, gone at setns): a procfs without
    # covered parts, which the kernel wants visible before the runs' own can be mounted
    _call("mount", b"proc", b"/proc", b"proc", _PROC_FLAGS, None)
    _call("setns", userns_fd, _NEWUSER)  # the owner's uid: all capabilities, only there
    os.close(userns_fd)
    os.setresgid(0, 0, 0)
    os.setgroups([])
    os.setresuid(0, 0, 0)  # the namespace's root: a host uid of its own, no host privilege
    for capability in range(int(open("/proc/sys/kernel/cap_last_cap").read()) + 1):
        _call("prctl", _PR_CAPBSET_DROP, capability, 0, 0, 0)  # none to gain by exec, ever
    for name in preload:
        try:
            __import__(name)
        except Exception:  # the run that imports it sees the error itself
            pass
    gc.collect()
    gc.freeze()  # keep the preloaded objects out of every child's collections
    _call("unshare", _NEWPID | _NEWNS)
    server = os.fork()
    if server:  # this process waits for the server, which it cannot be, and ends with it
        os.close(control_fd)
        os.waitpid(server, 0)
        os._exit(0)
    _serve_runs(control_fd, tmp_bytes)


def _serve_runs(control_fd: int, tmp_bytes: int) -> None:
    """Serve runs one at a time, each made ready (:func:`_prepare`) while the server waits for
    its request, so that a request costs neither a fork nor a namespace. The server is the
    init of the runs' pid namespace: after each run it kills and reaps every process left."""
    import fcntl  # noqa: F401  (what every run's process imports: imported once, here)
    import json  # noqa: F401
    import os
    import socket

    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    last_pid = _mount_proc()
    control = socket.socket(fileno=control_fd)
    run, channel = _prepare(control, tmp_bytes, last_pid, pid_max)
    control.send(b"ready")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the host stops reading the server's own streams once it is ready
        os.dup2(null, fd)
    os.close(null)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 4096, 4)
        except OSError:
            break
        if not message:
            break
        if message == b"kill":  # for a run that ended as the host gave up on it: done already
            continue
        socket.send_fds(channel, [message], fds)
        channel.close()
        for fd in fds:
            os.close(fd)
        hung_up = _watch(control, run)
        status = _end_run(run)
        if hung_up:
            break
        try:
            control.send(b"exit %d" % status)
        except OSError:
            break
        run, channel = _prepare(control, tmp_bytes, last_pid, pid_max)
    os._exit(0)


def _mount_proc() -> int:
    """Mount a procfs of the runs' pid namespace on ``/proc`` (so that a run's ``/proc/<pid>``
    is its own), where a run sees its own processes only (``hidepid=2``: not this server, of
    another uid), ``sys``, ``sysrq-trigger``, ``irq`` and ``bus`` are read-only (as bwrap leaves
    them) and ``keys``, ``key-users`` and ``cmdline`` read empty; the server's handle on its
    ``ns_last_pid``, opened before ``/proc/sys`` turns read-only."""
    import os

    _call("mount", None, b"/", None, _MS_REC | _MS_PRIVATE, None)
    _call("mount", b"proc", b"/proc", b"proc", _PROC_FLAGS, b"hidepid=2")
    last_pid = os.open("/proc/sys/kernel/ns_last_pid", os.O_WRONLY | os.O_CLOEXEC)
    empty = "/tmp/.empty"
    os.close(os.open(empty, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444))
    covers = {name: f"/proc/{name}" for name in ("sys", "sysrq-trigger", "irq", "bus")}
    covers.update({name: empty for name in ("keys", "key-users", "cmdline")})
    for name, source in covers.items():
        target = f"/proc/{name}".encode()
        if os.path.exists(target):
            _call("mount", source.encode(), target, None, _MS_BIND | _MS_REC, None)
            _call("mount", None, target, None,
                  _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _PROC_FLAGS, None)
    os.unlink(empty)
    return last_pid


def _prepare(control: object, tmp_bytes: int, last_pid: int, pid_max: int,
             ) -> tuple[int, object]:
    """The next run, made ahead: its process, at a random pid (so that no run chooses the
    next one's), in namespaces of its own (:func:`_isolate`), waiting on the returned channel
    for its request."""
    import os
    import socket

    # the server may: its user namespace owns the runs' pid namespace
    pid = 300 + int.from_bytes(os.urandom(4), "little") % (pid_max - 400)
    os.pwrite(last_pid, str(pid).encode(), 0)
    server_end, run_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    run = os.fork()
    if run == 0:
        control.close()  # type: ignore[attr-defined]
        server_end.close()
        _child(run_end, tmp_bytes)
    run_end.close()
    if server_end.recv(16) != b"prepared":
        raise OSError("a run's namespaces could not be made (see the traceback above)")
    return run, server_end


def _watch(control: object, run: int) -> bool:
    """Wait for the run's process to exit or for the host to say ``kill`` (or hang up, then
    say so)."""
    import os
    import select
    import signal

    pidfd = os.pidfd_open(run)
    try:
        ready, _, _ = select.select([control, pidfd], [], [])
        if pidfd in ready:
            return False
        hung_up = not control.recv(64)  # type: ignore[attr-defined]
        os.kill(run, signal.SIGKILL)  # the host says kill, or hung up: either way the run ends
        return hung_up
    finally:
        os.close(pidfd)


def _end_run(run: int) -> int:
    """Kill and reap every process of the runs' pid namespace but this server (its init: they
    all come to it); the exit status of the run's process (``128 + n`` for signal ``n``)."""
    import os
    import signal

    status = 128 + signal.SIGKILL
    while True:
        try:
            os.kill(-1, signal.SIGKILL)  # zombies count until reaped: one more round each
        except ProcessLookupError:
            return status
        pid, wait_status = os.waitpid(-1, 0)
        if pid == run:
            code = os.waitstatus_to_exitcode(wait_status)
            status = 128 - code if code < 0 else code


_LIBC: list = []
"""The C library, once a warm server has loaded it."""


def _call(name: str, *args: object) -> None:
    """Call the C library's ``name`` (setns, unshare, mount, prctl); ``OSError`` if it fails."""
    import ctypes
    import os

    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    if getattr(_LIBC[0], name)(*args) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{name}: {os.strerror(number)}")


def _child(channel: object, tmp_bytes: int) -> None:
    """The run's process: namespaces of its own, then its request from ``channel``, its
    streams in place, the run."""
    import fcntl
    import json
    import os
    import socket

    status = 1
    try:
        _isolate(tmp_bytes)
        channel.send(b"prepared")  # type: ignore[attr-defined]
        message, fds, _, _ = socket.recv_fds(channel, 4096, 4)  # type: ignore[arg-type]
        if not message:
            os._exit(1)
        channel.close()  # type: ignore[attr-defined]
        request = json.loads(message)
        os.setsid()
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64) for fd in fds]
        for fd, target in zip(high, (0, 1, 2, _ANSWER_FD), strict=True):
            os.dup2(fd, target)
        os.closerange(_ANSWER_FD + 1, 1 << 16)
        _reseed()
        try:
            _execute(_ANSWER_FD, request["limits"], request["relative_memory"])
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


def _isolate(tmp_bytes: int) -> None:
    """Give this process (a run's first) mount, network, IPC and cgroup namespaces of its own:
    a fresh ``/tmp`` of ``tmp_bytes``, its own loopback (up), no System V or POSIX IPC object of
    anyone else, its cgroup as ``/``. All of it goes when the run's last process does."""
    import fcntl
    import os
    import socket
    import struct

    _call("unshare", _NEWNS | _NEWNET | _NEWIPC | _NEWCGROUP)
    _call("mount", None, b"/", None, _MS_REC | _MS_PRIVATE, None)
    _call("mount", b"tmpfs", b"/tmp", b"tmpfs", _MS_NOSUID | _MS_NODEV,
          f"size={tmp_bytes},mode=1777".encode())
    os.chdir("/tmp")
    with socket.socket() as probe:  # SIOCGIFFLAGS, SIOCSIFFLAGS: lo's flags, and IFF_UP
        request = fcntl.ioctl(probe, 0x8913, struct.pack("16sh14x", b"lo", 0))
        flags = struct.unpack("16sh14x", request)[1] | 1
        fcntl.ioctl(probe, 0x8914, struct.pack("16sh14x", b"lo", flags))


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


if __name__ == "__main__":
    main()
