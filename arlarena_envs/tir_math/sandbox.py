"""A sandbox for model-written Python: a fresh uid, memory budget and ``/tmp`` per execution,
in a bubblewrap namespace of its own or forked by a warm server.

Holds :class:`Sandbox` (``run(code) -> ExecResult``), :class:`SandboxLimits`,
:class:`ExecResult`, :class:`ExecStatus`, the errors :class:`SandboxUnavailable` /
:class:`SandboxError`, :data:`UNSAFE_ENV_VAR`, :data:`MAX_ANSWER_CHARS`, :data:`PRELOAD` and
:func:`truncate_middle`. Every string of an :class:`ExecResult` follows the one text rule
(:mod:`arlarena_envs.text_rule`): it encodes as UTF-8 and lies in an env's observation space.

Every execution runs in new network, ipc, mount and cgroup namespaces, and in a pid namespace
where nothing runs but it (and, warm, its server). The network namespace has one interface,
its own loopback: bubblewrap (warm, the run's process) brings it up, so the program's processes may
talk to each other over 127.0.0.1, but nothing outside the namespace (the host's loopback
included) is reachable. The root is read-only and holds only ``/usr`` (and the ``/bin``,
``/lib`` links), the Python installation and, of the current environment's site-packages, only
the packages of the allowlist :data:`SANDBOX_PACKAGES` (numpy, sympy, mpmath, scipy and what
they require: :mod:`._packages`), mounted read-only under ``/opt/arlarena``; the package trees
of ``/usr`` and of the interpreter's prefix are covered by empty directories, so no evaluation
set, problem generator, model or other library is readable inside. Then a ``/proc`` of the
run's own pid namespace (``/proc/cmdline``, ``/proc/keys`` and ``/proc/key-users`` read empty),
a minimal ``/dev`` and a size-capped private tmpfs ``/tmp`` (the working and home directory).
The project, ``/root``, ``/home`` and the rest of ``/etc`` do not exist inside. The code runs
as an unprivileged uid, without capabilities, under a seccomp filter (:data:`REFUSED_SYSCALLS`:
no new user namespace, keyring, io_uring, AIO, perf event, bpf, inotify, vsock or uevent
socket, socket cookie or page cache probe), with limits on CPU time, processes, file size
and open files; the host enforces wall time and the
size of everything the program sends back (stdout, stderr, the answer channel), and every
process of the execution is killed when the program ends or overruns, so none outlives it.

Memory is bounded for the run as a whole (every process, ``/tmp`` and socket buffers): by a
cgroup of the run (``memory.max``, or v1's ``memory.limit_in_bytes`` with
``memory.kmem.tcp.limit_in_bytes``, and ``pids.max``), which also gives the run a CPU quota
(``cpu.max`` / ``cpu.cfs_quota_us``), where this process can make one (see
:mod:`arlarena_envs.tir_math._cgroup`); elsewhere by address-space limits per process whose
product over the allowed processes stays within the budget (:attr:`Sandbox.memory_bound` and
:attr:`Sandbox.cpu_bound` say which bounds apply).

One bwrap starts each execution. As root, it sets up the namespaces and mounts with its
privileges and starts the interpreter with only ``CAP_SETUID``/``CAP_SETGID``, which the
interpreter uses at once to become a fresh random uid (never 0, so ``RLIMIT_NPROC`` applies),
under a seccomp filter that refuses new user namespaces; as any other user, bwrap creates the
user namespace itself, with ``--disable-userns``. No new privileges can be gained either way
(``PR_SET_NO_NEW_PRIVS``). The interpreter starts with ``-S``: the site-packages directories
(and the directories their ``.pth`` files list) are put on ``sys.path`` without running any
``.pth`` code, and the code arrives on stdin once the interpreter is ready. Its output
encodes with ``backslashreplace``, so printing a lone surrogate shows ``\\ud800`` instead of
failing.

**Warm servers** (as root, the default): instead of one bwrap per execution, a process-wide
pool of warm servers (:mod:`arlarena_envs.tir_math._warm`), each a bwrap set up as above but
with ``CAP_SYS_ADMIN`` alone, with which its interpreter mounts a procfs (the kernel lets the
runs' own be mounted only where one without covered parts is in view) before it joins a user
namespace the host made (its root is a
host uid of its own, with capabilities over nothing of the host's: :mod:`._uids`), imports
:data:`PRELOAD` (where a cgroup bounds runs' memory) and serves one execution at a time, in the
server's own cgroup, whose limits the host sets to the run's budget on top of what the server
holds once ready (a run never migrates between cgroups: that waits for an RCU grace period, 7
ms or more on an idle machine). Each run's process is forked ahead, at a random pid, and takes
mount, network, IPC and cgroup namespaces of its own (a fresh ``/tmp`` and loopback) before its
request comes; it then becomes a fresh random uid and applies the same limits (its
address-space cap counting from what the server already maps), with its random generators
reseeded. When it ends, the server (the init of the runs' pid namespace) kills and reaps every
process left, and the run's namespaces go with them: the server never touches what a run
leaves. A run cannot signal, trace or read the server (another uid) and never sees the code or
output of another run: those travel on the run's own pipes, which the server only hands over.
Runs then cost a fork, not a bwrap and an interpreter start (see ``bench/tir_sandbox.py``);
``warm=False`` gives the cold path, and an unprivileged caller always has it (bwrap's user
namespace maps one uid, so runs could not be told apart from their server), as does a host
where no user namespace can be made.

Without ``bwrap`` the sandbox refuses to start unless the caller opts in to running code with
resource limits only (``unsafe=True`` or ``ARLARENA_UNSAFE_SANDBOX=1``), which is logged as a
warning every time such a sandbox is created: that mode gives no isolation at all.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import platform
import select
import selectors
import shutil
import signal
import site
import socket
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path

from arlarena_envs.text_rule import MAX_OBS_CHARS, clean_text, truncate_middle
from arlarena_envs.tir_math._cgroup import CgroupLimits, RunCgroup, find_cgroups
from arlarena_envs.tir_math._packages import SANDBOX_PACKAGES, allowed_entries, python_trees
from arlarena_envs.tir_math._uids import UserNamespace, draw_uid, user_namespace
from arlarena_envs.tir_math._warm import _START_TIMEOUT_S, Zygote, ZygoteError, ZygotePool, pool

__all__ = [
    "MAX_ANSWER_CHARS",
    "PRELOAD",
    "REFUSED_SYSCALLS",
    "SANDBOX_PACKAGES",
    "UNSAFE_ENV_VAR",
    "ExecResult",
    "ExecStatus",
    "Sandbox",
    "SandboxError",
    "SandboxLimits",
    "SandboxUnavailable",
    "truncate_middle",
]

logger = logging.getLogger(__name__)

UNSAFE_ENV_VAR = "ARLARENA_UNSAFE_SANDBOX"
"""Set to ``1`` to run code without bubblewrap (resource limits only, no isolation)."""

MAX_ANSWER_CHARS = 10_000
"""The longest answer an execution can give (:attr:`SandboxLimits.max_answer_chars`)."""

_INSIDE = "/opt/arlarena"
_SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime")
_PRELUDE = (Path(__file__).with_name("_prelude.py")).read_text(encoding="utf-8")
PRELOAD = ("numpy", "sympy")
"""What a warm server imports before it forks runs (the TIR tool's usual imports)."""


_SYSCALLS = {  # the audit arch, then the numbers of the calls the filter looks at, by name
    "x86_64": (0xC000003E, {
        "unshare": 272, "clone": 56, "socket": 41, "getsockopt": 55, "preadv2": 327,
        "pwritev2": 328, "add_key": 248, "request_key": 249, "keyctl": 250, "io_setup": 206,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "perf_event_open": 298, "bpf": 321, "inotify_init": 253, "inotify_init1": 294,
        "fanotify_init": 300, "cachestat": 451, "fadvise64": 221}),
    "aarch64": (0xC00000B7, {
        "unshare": 97, "clone": 220, "socket": 198, "getsockopt": 209, "preadv2": 286,
        "pwritev2": 287, "add_key": 217, "request_key": 218, "keyctl": 219, "io_setup": 0,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "perf_event_open": 241, "bpf": 280, "inotify_init1": 26, "fanotify_init": 262,
        "cachestat": 451, "fadvise64": 223}),
}
REFUSED_SYSCALLS: dict[str, str] = {
    "add_key": "keys outlive their run in the host kernel, where the next run reads them",
    "request_key": "the keyrings (above)",
    "keyctl": "the keyrings (above); the session keyring a process inherits is the host's",
    "io_setup": "Linux AIO: one run could take every slot of the host-wide fs.aio-max-nr",
    "io_uring_setup": "io_uring: a large kernel surface that bypasses every argument filter",
    "io_uring_enter": "io_uring (above)",
    "io_uring_register": "io_uring (above)",
    "perf_event_open": "hardware counters and kernel events of the host",
    "bpf": "programs that read host-wide counters (socket cookies)",
    "inotify_init": "watches that see the host's reads of the mounted packages",
    "inotify_init1": "inotify (above)",
    "fanotify_init": "the same watches, by fanotify",
    "cachestat": "reads the shared page cache: a channel between runs",
    "fadvise64": "evicts shared files from the page cache: a channel between runs",
}
"""The calls the sandbox's seccomp filter refuses (``EPERM``) whatever their arguments, and why.
It also refuses ``preadv2``/``pwritev2`` (``ENOSYS``, so the C library falls back to
``preadv``/``pwritev`` for plain reads and fails ``RWF_NOWAIT``, a page cache probe), ``clone3``
(``ENOSYS``), new user namespaces, ``AF_VSOCK`` sockets (the hypervisor's ports),
``NETLINK_KOBJECT_UEVENT`` (the host's device events) and ``NETLINK_SOCK_DIAG`` sockets, and
``getsockopt`` of ``SO_COOKIE`` and ``SO_NETNS_COOKIE`` (host-wide counters)."""
_AF_NETLINK, _AF_VSOCK = 16, 40
_NETLINK_SOCK_DIAG, _NETLINK_KOBJECT_UEVENT = 4, 15
_SOL_SOCKET, _SO_COOKIE, _SO_NETNS_COOKIE = 1, 57, 71


def _seccomp_program(machine: str) -> bytes | None:
    """A seccomp filter (bwrap's ``--seccomp`` format) that refuses new user namespaces, the
    calls of :data:`REFUSED_SYSCALLS` and the arguments it names.

    ``unshare`` and ``clone`` with ``CLONE_NEWUSER`` fail with EPERM; ``clone3``, whose flags
    a filter cannot read, fails with ENOSYS, so libc falls back to ``clone``; so do calls of
    another ABI (i386, x32), which could otherwise dodge the checks (the i386 ``socketcall``
    among them). ``None`` on other machines.
    """
    if machine not in _SYSCALLS:
        return None
    arch, number = _SYSCALLS[machine]
    load, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06

    def arg(index: int) -> tuple[int, int, int, int]:  # load the low half of args[index]
        return (load, 0, 0, 16 + 8 * index)

    program: list[tuple[int, int | str, int | str, int] | str] = [
        (load, 0, 0, 4),  # seccomp_data.arch
        (jeq, 0, "nosys", arch),
        (load, 0, 0, 0),  # seccomp_data.nr
        (jge, "nosys", 0, 0x40000000),  # the x32 ABI
        (jeq, "nosys", 0, 435),  # clone3
        (jeq, "nosys", 0, number["preadv2"]),
        (jeq, "nosys", 0, number["pwritev2"]),
        *((jeq, "refuse", 0, number[name]) for name in REFUSED_SYSCALLS if name in number),
        (jeq, "socket", 0, number["socket"]),
        (jeq, "sockopt", 0, number["getsockopt"]),
        (jeq, "flags", 0, number["unshare"]),
        (jeq, "flags", "allow", number["clone"]),
        "flags", arg(0),
        (jset, "refuse", "allow", 0x10000000),  # CLONE_NEWUSER
        "socket", arg(0),  # the address family
        (jeq, "refuse", 0, _AF_VSOCK),
        (jeq, 0, "allow", _AF_NETLINK),
        arg(2),  # the netlink protocol
        (jeq, "refuse", 0, _NETLINK_KOBJECT_UEVENT),
        (jeq, "refuse", "allow", _NETLINK_SOCK_DIAG),
        "sockopt", arg(1),  # the level
        (jeq, 0, "allow", _SOL_SOCKET),
        arg(2),  # the option
        (jeq, "refuse", 0, _SO_COOKIE),
        (jeq, "refuse", "allow", _SO_NETNS_COOKIE),
        "allow", (ret, 0, 0, 0x7FFF0000),
        "nosys", (ret, 0, 0, 0x00050000 | 38),
        "refuse", (ret, 0, 0, 0x00050000 | 1),
    ]
    steps, where = [], {}  # the instructions, and where each label's instruction is
    for step in program:
        if isinstance(step, str):
            where[step] = len(steps)
        else:
            steps.append(step)

    def offset(target: int | str, index: int) -> int:  # a jump: how many instructions it skips
        return target if isinstance(target, int) else where[target] - index - 1

    return b"".join(struct.pack("=HBBI", code, offset(true, i), offset(false, i), k)
                    for i, (code, true, false, k) in enumerate(steps))


_SECCOMP = _seccomp_program(platform.machine())


@dataclass
class _Fds:
    """The pipes of one run. The host keeps ``stdin``, ``stdout``, ``stderr``, ``answer``,
    ``info`` and ``block``; the rest (:attr:`child`) are the child's, which the host closes once
    the child has them."""

    opened: list[int] = field(default_factory=list)
    stdin: int = -1
    stdout: int = -1
    stderr: int = -1
    answer: int = -1
    info: int = -1
    block: int = -1
    streams_child: tuple[int, ...] = ()

    def pipe(self) -> tuple[int, int]:
        read, write = os.pipe()
        self.opened += [read, write]
        return read, write

    def streams(self) -> tuple[int, int, int, int]:
        """The child's stdin, stdout, stderr and answer-channel ends of four new pipes."""
        stdin, self.stdin = self.pipe()
        self.stdout, stdout = self.pipe()
        self.stderr, stderr = self.pipe()
        self.answer, answer = self.pipe()
        self.streams_child = (stdin, stdout, stderr)
        return stdin, stdout, stderr, answer

    def holding(self, data: bytes) -> int:
        """The read end of a new pipe that holds ``data`` (at most a pipe's buffer)."""
        read, write = self.pipe()
        os.write(write, data)
        self.close_fd(write)
        return read

    @property
    def child(self) -> list[int]:
        host = {self.stdin, self.stdout, self.stderr, self.answer, self.info, self.block}
        return [fd for fd in self.opened if fd not in host]

    @property
    def inherited(self) -> list[int]:
        """The child's fds that keep their numbers (its streams become 0, 1 and 2)."""
        return [fd for fd in self.child if fd not in self.streams_child]

    def release_block(self) -> None:
        """Let bwrap's child go on (``--block-fd`` returns at end of file)."""
        if self.block >= 0:
            self.close_fd(self.block)
            self.block = -1

    def close_child(self) -> None:
        for fd in self.child:
            self.close_fd(fd)

    def close(self) -> None:
        for fd in list(self.opened):
            self.close_fd(fd)

    def close_fd(self, fd: int) -> None:
        if fd in self.opened:
            self.opened.remove(fd)
            os.close(fd)


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run on this machine (e.g. bubblewrap is not installed)."""


class SandboxError(RuntimeError):
    """The sandbox itself failed to start a program (not an error of the program)."""


class ExecStatus(StrEnum):
    """How an execution ended."""

    OK = "ok"
    """Exited with status 0 (or called ``final_answer``)."""
    ERROR = "error"
    """Raised an exception or exited non-zero; the traceback is in ``stderr``."""
    TIMEOUT = "timeout"
    """Ran past the wall-time or CPU-time limit and was killed."""
    MEMORY = "memory"
    """Ran out of its memory allowance (``MemoryError``)."""
    OUTPUT_LIMIT = "output_limit"
    """Printed more than the output allowance and was stopped."""
    KILLED = "killed"
    """Died from a signal (e.g. a crash in native code)."""


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one execution.

    ``memory_bytes`` bounds the run as a whole: under a cgroup, every page of every process
    and of ``/tmp`` and its socket buffers (cgroup v1 counts these apart, against a second
    budget of the same size), with each process also capped at ``memory_bytes`` of address
    space so that one huge allocation is a ``MemoryError``; without one, each process gets an
    address-space cap of ``memory_bytes / n`` and at most ``n`` processes run, ``n`` being
    ``max_processes`` or fewer, so that no process has less than ``min_process_bytes``.
    ``cpu_cores`` is the run's CPU quota as a whole (a cgroup's, where one can be made), on top
    of ``cpu_time_s`` per process. ``max_answer_chars`` caps an answer however it arrives
    (``final_answer`` or a line written straight to the answer channel), and the channel
    carries at most one such answer.
    """

    wall_time_s: float = 10.0
    cpu_time_s: int = 10
    memory_bytes: int = 1 << 30
    max_processes: int = 16
    max_output_bytes: int = 64 << 10
    max_file_bytes: int = 16 << 20
    tmp_bytes: int = 64 << 20
    max_open_files: int = 128
    max_code_bytes: int = 1 << 20
    max_answer_chars: int = MAX_ANSWER_CHARS
    min_process_bytes: int = 256 << 20
    cpu_cores: float = 1.0

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if value <= 0:
                raise ValueError(f"SandboxLimits.{name} must be positive, got {value}")

    @property
    def answer_channel_bytes(self) -> int:
        """What the answer channel may carry: ``ready`` and one maximal escaped answer."""
        return 64 + 10 * self.max_answer_chars


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one execution.

    Attributes:
        status: how it ended.
        stdout, stderr: what it printed (decoded, cut at the output allowance with a marker).
        answer: the last value passed to ``final_answer``, or ``None``.
        (These and ``message`` follow the one text rule: see :meth:`__post_init__`.)
        exit_code: the exit status (``128 + n`` for signal ``n``), ``None`` if killed by the host.
        wall_time_s: seconds from start to end, sandbox set-up included (the wall-time limit
            counts from when the interpreter is ready for the code).
        truncated: whether output was cut.
        message: a one-line explanation for statuses other than ``ok`` and ``error``.
    """

    status: ExecStatus
    stdout: str
    stderr: str
    answer: str | None = None
    exit_code: int | None = None
    wall_time_s: float = 0.0
    truncated: bool = False
    message: str = ""

    def __post_init__(self) -> None:
        """Every string the sandbox hands out follows the one text rule
        (:func:`~arlarena_envs.text_rule.clean_text`): it encodes as UTF-8 and lies in an env's
        observation space (controls escaped, lone surrogates U+FFFD, at most
        :data:`~arlarena_envs.text_rule.MAX_OBS_CHARS` characters)."""
        for name in ("stdout", "stderr", "answer", "message"):
            if (value := getattr(self, name)) is not None:
                object.__setattr__(self, name, clean_text(value, MAX_OBS_CHARS))

    @property
    def ok(self) -> bool:
        return self.status is ExecStatus.OK

    def output(self, max_chars: int = 4000) -> str:
        """What the model is shown: stdout, then the error (traceback tail) or the limit hit."""
        parts = [self.stdout.rstrip("\n")] if self.stdout.strip() else []
        if self.stderr.strip():
            parts.append(self.stderr.rstrip("\n"))
        if self.message:
            parts.append(self.message)
        return truncate_middle("\n".join(parts), max_chars)


@dataclass(frozen=True)
class _Layout:
    """Where the interpreter and its packages are on the host and inside the sandbox, and the
    package trees of the mounted system directories that the sandbox covers."""

    python: str
    mounts: tuple[tuple[str, str], ...] = ()
    sys_path: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    covers: tuple[str, ...] = ()


def _under(path: Path, roots: Sequence[str]) -> bool:
    return any(path == Path(r) or path.is_relative_to(r) for r in roots)


def _system_roots() -> list[str]:
    roots = ["/usr"]
    roots += [d for d in _SYSTEM_LINKS if os.path.isdir(d) and not os.path.islink(d)]
    return roots


def _pth_dirs(site_dir: Path) -> list[Path]:
    """The existing directories listed in ``site_dir``'s ``.pth`` files (code lines skipped)."""
    found = []
    for pth in sorted(site_dir.glob("*.pth")):
        try:
            lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            entry = line.strip()
            if entry and not entry.startswith(("#", "import ", "import\t")):
                path = (site_dir / entry).resolve()
                if path.is_dir():
                    found.append(path)
    return found


def _detect_layout(site_dirs: Sequence[str] | None, *, mount: bool = True) -> _Layout:
    """Map this interpreter and the allowed packages of its site-packages into the sandbox
    (read-only mounts; :mod:`._packages`), and cover the package trees of what is mounted whole
    (``/usr``, the interpreter's prefix).

    With ``mount=False`` (no sandbox) everything stays where it is on the host, every package
    of ``site_dirs`` (and the directories their ``.pth`` files list) on the path.
    """
    candidates = site_dirs if site_dirs is not None else site.getsitepackages()
    found = [path for raw in candidates if (path := Path(raw).resolve()).is_dir()]
    base = Path(sys.base_prefix).resolve()
    exe = Path(getattr(sys, "_base_executable", "") or sys.executable).resolve()
    if not exe.is_relative_to(base):
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        exe = (base / "bin" / version).resolve()
    if not mount:
        paths = dict.fromkeys(str(p) for d in found for p in (d, *_pth_dirs(d)))
        return _Layout(str(exe), sys_path=tuple(paths))
    roots = _system_roots()
    mounts: list[tuple[str, str]] = []
    env: dict[str, str] = {}
    python = str(exe)
    covers = [str(tree) for root in roots for tree in python_trees(Path(root))]
    if not _under(base, roots):
        inside = f"{_INSIDE}/python"
        mounts.append((str(base), inside))
        python = f"{inside}/{exe.relative_to(base)}"
        libdir = Path(sysconfig.get_config_var("LIBDIR") or base / "lib").resolve()
        if libdir.is_relative_to(base):
            env["LD_LIBRARY_PATH"] = f"{inside}/{libdir.relative_to(base)}"
        covers += [f"{inside}/{tree.relative_to(base)}" for tree in python_trees(base)]
    sys_path: list[str] = []
    for number, (site_dir, entries) in enumerate(allowed_entries(found).items()):
        target = f"{_INSIDE}/site/{number}"
        mounts += [(str(site_dir / entry), f"{target}/{entry}") for entry in entries]
        sys_path.append(target)
    return _Layout(python, tuple(mounts), tuple(sys_path), env, tuple(covers))


_CHILD_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONIOENCODING": "utf-8:backslashreplace",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
    "MPLCONFIGDIR": "/tmp",
}


class Sandbox:
    """Runs untrusted Python, each call in a fresh bubblewrap sandbox (see the module docs).

    Thread-safe: every :meth:`run` is independent, so callers may run many in parallel.

    Example:
        >>> sandbox = Sandbox()
        >>> result = sandbox.run("print(6 * 7)")
        >>> result.status.value, result.stdout
        ('ok', '42\\n')
        >>> sandbox.run("final_answer(2 ** 10)").answer
        '1024'
    """

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        unsafe: bool | None = None,
        site_dirs: Sequence[str] | None = None,
        cgroups: bool = True,
        warm: bool = True,
        preload: Sequence[str] = PRELOAD,
    ) -> None:
        """
        Args:
            limits: resource limits (defaults: :class:`SandboxLimits`).
            unsafe: run without bubblewrap, with resource limits only. ``None`` reads
                ``ARLARENA_UNSAFE_SANDBOX``. Never use it for code you do not trust.
            site_dirs: the site-packages dirs whose allowlisted packages (:data:`SANDBOX_PACKAGES`)
                runs may import (default: this environment's).
            cgroups: bound each run's memory and processes with a cgroup where one can be made
                (else, or with ``False``, with per-process limits; see :class:`SandboxLimits`).
            warm: as root, fork each run from a warm server of the process-wide pool (see the
                module docs) instead of starting a bwrap for it; elsewhere every run is cold.
            preload: the modules a warm server imports, where runs' memory is bounded by a
                cgroup (with per-process limits they would count against each process's).
        """
        self.limits = limits or SandboxLimits()
        if unsafe is None:
            unsafe = os.environ.get(UNSAFE_ENV_VAR, "").strip().lower() in {"1", "true", "yes"}
        self.unsafe = bool(unsafe)
        self.is_root = os.geteuid() == 0
        self._bwrap = shutil.which("bwrap")
        if self.unsafe:
            logger.warning(
                "UNSAFE sandbox: model code runs WITHOUT isolation (resource limits only; "
                "%s is set or unsafe=True). It can read and write your files, use the network "
                "and leave processes behind%s.",
                UNSAFE_ENV_VAR, ", and as root no process limit applies" if self.is_root else "",
            )
        elif self._bwrap is None:
            raise SandboxUnavailable(
                "bubblewrap (`bwrap`) is not installed; the TIR maths sandbox needs it. Install "
                "the `bubblewrap` package (Debian/Ubuntu: `apt-get install -y bubblewrap`), or, "
                f"only for code you trust, set {UNSAFE_ENV_VAR}=1 to run with resource limits "
                "alone."
            )
        elif self.is_root and _SECCOMP is None:
            raise SandboxUnavailable(
                f"as root the sandbox needs a seccomp filter, which exists for x86_64 and aarch64 "
                f"only (this machine: {platform.machine()}); run as an ordinary user instead."
            )
        self._layout = _detect_layout(site_dirs, mount=not self.unsafe)
        self._cgroups = find_cgroups() if cgroups else None
        limits = self.limits
        if self._cgroups is not None:
            self._processes, self._process_bytes = limits.max_processes, limits.memory_bytes
        else:
            fit = max(1, limits.memory_bytes // limits.min_process_bytes)
            self._processes = min(limits.max_processes, fit)
            self._process_bytes = limits.memory_bytes // self._processes
        self._pool: ZygotePool | None = None
        self._preload: tuple[str, ...] = ()
        self._userns: UserNamespace | None = None
        if warm and self.is_root and not self.unsafe:
            try:
                self._userns = user_namespace()
            except OSError as error:
                logger.warning("no warm sandbox servers (%s): every run is cold", error)
        if self._userns is not None:
            self._preload = tuple(preload) if self._cgroups is not None else ()
            key = (tuple(self._mount_args(warm=True)), self._layout.python, self._layout.sys_path,
                   self._preload)
            self._pool = pool(key, self._spawn)

    @property
    def warm(self) -> bool:
        """Whether runs fork from warm servers (root, not unsafe, ``warm=True``, a user
        namespace to be had)."""
        return self._pool is not None

    @property
    def memory_bound(self) -> str:
        """What bounds a run's memory and processes on this machine, in words."""
        limits = self.limits
        if self._cgroups is not None:
            return (f"{self._cgroups.description}: {limits.memory_bytes >> 20} MiB (and as much "
                    f"of socket buffers) and {limits.max_processes} tasks per run, /tmp included")
        return (f"rlimits: RLIMIT_AS {self._process_bytes >> 20} MiB x RLIMIT_NPROC "
                f"{self._processes} processes = {limits.memory_bytes >> 20} MiB per run, plus "
                f"{limits.tmp_bytes >> 20} MiB of /tmp (no writable cgroup)")

    @property
    def cpu_bound(self) -> str:
        """What bounds a run's CPU time on this machine, in words."""
        per_process = f"RLIMIT_CPU {self.limits.cpu_time_s} s per process"
        if self._cgroups is not None and self._cgroups.cpu_parent is not None:
            name = "cpu.max" if self._cgroups.version == 2 else "cpu.cfs_quota_us"
            return (f"cgroup v{self._cgroups.version} {name}: {self.limits.cpu_cores:g} cores per "
                    f"run, and {per_process}")
        return f"{per_process} (no writable cgroup cpu controller)"

    # -- command lines -------------------------------------------------------------------------
    def _mount_args(self, *, warm: bool = False) -> list[str]:
        """bwrap's mounts; a warm server mounts its ``/proc`` itself (see the prelude)."""
        args = ["--ro-bind", "/usr", "/usr"]
        for path in _SYSTEM_LINKS:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        args += ["--perms", "0755", "--dir", "/etc"]
        for path in _ETC_FILES:
            args += ["--ro-bind-try", path, path]
        if self._layout.mounts:
            for directory in (_INSIDE, f"{_INSIDE}/site", *self._layout.sys_path):
                args += ["--perms", "0755", "--dir", directory]
        for source, target in self._layout.mounts:
            args += ["--ro-bind", source, target]
        for tree in self._layout.covers:  # an empty, read-only directory over each
            args += ["--perms", "0555", "--size", "4096", "--tmpfs", tree, "--remount-ro", tree]
        args += ["--dir", "/proc"] if warm else ["--proc", "/proc"]
        args += ["--dev", "/dev"]
        args += ["--perms", "1777", "--size", str(self.limits.tmp_bytes), "--tmpfs", "/tmp"]
        args += ["--remount-ro", "/", "--remount-ro", "/dev", "--chdir", "/tmp", "--clearenv"]
        for key, value in {**_CHILD_ENV, **self._layout.env}.items():
            args += ["--setenv", key, value]
        return args

    def _limits_args(self, uid: int) -> list[int]:
        """What the prelude applies after becoming ``uid``: the rlimits and the longest answer."""
        limits = self.limits
        return [uid, self._process_bytes, int(limits.cpu_time_s), self._processes,
                limits.max_file_bytes, limits.max_open_files, limits.max_answer_chars]

    def _python_args(self, answer_fd: int, uid: int = 0) -> list[str]:
        return [self._layout.python, "-S", "-P", "-u", "-B", "-c", _PRELUDE, str(answer_fd),
                *map(str, self._limits_args(uid)), *self._layout.sys_path]

    def _options(self, fds: _Fds, cgroup: RunCgroup | None, *, warm: bool = False,
                 ) -> tuple[list[str], int]:
        """bwrap's options for one run (or a warm server), and the uid the interpreter is to
        become (0: stay).

        As root, bwrap keeps only ``CAP_SETUID``/``CAP_SETGID`` for the interpreter, which drops
        to a fresh random uid before it does anything else (a warm server keeps no capability:
        it joins a user namespace the host owns, see :mod:`._uids`); as any other user, bwrap
        makes the user namespace itself and ``--disable-userns`` refuses nested ones. Either
        way a seccomp filter refuses new user namespaces and the keyrings (on other machines
        than x86_64 and aarch64, as another user, ``--disable-userns`` alone), and
        ``/proc/keys`` and ``/proc/key-users`` read empty. With a cgroup, bwrap reports its
        child's pid (``--info-fd``) and waits (``--block-fd``) until the host has moved that
        child into the cgroup, so that every process of the sandbox starts in it.
        """
        options = [
            "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try", "--hostname", "sandbox", "--die-with-parent", "--new-session",
            *self._mount_args(warm=warm),
        ]
        for path in () if warm else ("/proc/keys", "/proc/key-users", "/proc/cmdline"):
            options += ["--perms", "0444", "--ro-bind-data", str(fds.holding(b"")), path]
        uid = 0
        if _SECCOMP is not None:
            options += ["--seccomp", str(fds.holding(_SECCOMP))]
        if self.is_root:
            caps = ["CAP_SYS_ADMIN"] if warm else ["CAP_SETUID", "CAP_SETGID"]
            uid = 0 if warm else draw_uid()
            options += ["--cap-drop", "ALL", *(arg for cap in caps for arg in ("--cap-add", cap))]
        else:
            options = ["--unshare-user", "--disable-userns", *options]
        if cgroup is not None:
            fds.info, info_w = fds.pipe()
            block_r, fds.block = fds.pipe()
            options += ["--info-fd", str(info_w), "--block-fd", str(block_r)]
        return options, uid

    def _bwrap_argv(self, fds: _Fds, options: list[str], python: list[str]) -> list[str]:
        encoded = b"".join(option.encode() + b"\0" for option in options)
        if len(encoded) >= 60_000:
            raise SandboxError("sandbox options too long for a pipe")
        assert self._bwrap is not None
        return [self._bwrap, "--args", str(fds.holding(encoded)), "--", *python]

    def _spawn(self) -> Zygote:
        """Start a warm server (run by the pool when none is idle), in a cgroup of its own where
        runs' memory is bounded by one."""
        fds = _Fds()
        control, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        cgroup = None
        try:
            limits = self.limits
            if self._cgroups is not None:  # room for the imports; each run sets its own
                cgroup = self._cgroups.create(CgroupLimits(
                    limits.memory_bytes + (256 << 20), limits.memory_bytes,
                    limits.max_processes + 4, limits.cpu_cores))
            options, _ = self._options(fds, cgroup, warm=True)
            assert self._userns is not None
            python = [self._layout.python, "-S", "-P", "-u", "-B", "-c", _PRELUDE, "serve",
                      str(child_end.fileno()), str(self._userns.fd), str(limits.tmp_bytes),
                      ",".join(self._preload), *self._layout.sys_path]
            argv = self._bwrap_argv(fds, options, python)

            def admit() -> None:
                fds.close_child()
                if fds.info >= 0:
                    info = _read_to_end(fds.info, 30.0)
                    self._enter_cgroup(cgroup, _child_pid(info), fds)

            return Zygote(argv, [*fds.child, self._userns.fd], control, child_end, admit, cgroup)
        except ZygoteError as error:
            raise SandboxError(str(error)) from None
        except BaseException:
            control.close()
            child_end.close()
            if cgroup is not None:
                cgroup.remove()
            raise
        finally:
            fds.close()

    # -- running -------------------------------------------------------------------------------
    def run(self, code: str) -> ExecResult:
        """Execute ``code`` (a complete Python script) and report how it went.

        Raises:
            SandboxError: if the sandbox could not start the interpreter at all.
        """
        data = code.encode("utf-8", errors="replace")
        if len(data) > self.limits.max_code_bytes:
            return ExecResult(
                ExecStatus.ERROR, "", "",
                message=f"Code rejected: longer than {self.limits.max_code_bytes} bytes.",
            )
        if self._pool is not None:
            return self._run_warm(data)
        cgroup = None
        if self._cgroups is not None:
            monitor = 0 if self.unsafe else 1  # bwrap's pid 1 shares the run's cgroup
            limits = self.limits
            cgroup = self._cgroups.create(CgroupLimits(
                limits.memory_bytes, limits.memory_bytes, limits.max_processes + monitor,
                limits.cpu_cores))
        try:
            return self._run_cold(data, cgroup)
        finally:
            if cgroup is not None:
                cgroup.remove()

    def _run_cold(self, data: bytes, cgroup: RunCgroup | None) -> ExecResult:
        """One execution in a bwrap (or, unsafe, an interpreter) of its own."""
        fds = _Fds()
        workdir = proc = None
        try:
            stdin, stdout, stderr, answer = fds.streams()
            if self.unsafe:
                workdir = tempfile.TemporaryDirectory(prefix="arlarena-unsafe-")
                argv = self._python_args(answer)
                env = {**_CHILD_ENV, "HOME": workdir.name, "TMPDIR": workdir.name}
            else:
                options, uid = self._options(fds, cgroup)
                argv = self._bwrap_argv(fds, options, self._python_args(answer, uid))
                env = {"PATH": _CHILD_ENV["PATH"]}
            start = time.monotonic()
            proc = subprocess.Popen(
                argv, stdin=stdin, stdout=stdout, stderr=stderr, pass_fds=fds.inherited,
                start_new_session=True, env=env, cwd=workdir.name if workdir else "/",
            )
            fds.close_child()
            if cgroup is not None and self.unsafe:
                cgroup.add(proc.pid)  # it starts no process before it has the code
            watch = {}
            if fds.info >= 0:
                info = bytearray()

                def read_info() -> bool:
                    chunk = os.read(fds.info, 4096)
                    info.extend(chunk[: max(4096 - len(info), 0)])
                    if not chunk:
                        self._enter_cgroup(cgroup, _child_pid(info), fds)
                    return bool(chunk)

                watch[fds.info] = read_info
            return self._communicate(
                fds, data, start, watch, functools.partial(_wait, proc),
                functools.partial(_kill, proc), cgroup.oom_killed if cgroup else lambda: False)
        finally:
            if proc is not None and proc.poll() is None:
                _kill(proc)
            fds.close()
            if workdir:
                workdir.cleanup()

    def _run_warm(self, data: bytes) -> ExecResult:
        """One execution forked by a warm server of the pool, in the server's cgroup; again on
        a fresh server if the first one failed before the run had its code (a server that died
        idle or under the run's start: no code has run, so none runs twice)."""
        try:
            return self._run_on_server(data)
        except SandboxError:
            return self._run_on_server(data)

    def _run_on_server(self, data: bytes) -> ExecResult:
        assert self._pool is not None
        fds = _Fds()
        ended: list[int | None] = []
        zygote = None
        try:
            ends = fds.streams()
            assert self._userns is not None
            uid = draw_uid(exclude={self._userns.root})
            request = {"limits": self._limits_args(uid), "relative_memory": bool(self._preload)}
            start = time.monotonic()
            zygote, kills = self._request(request, list(ends))
            fds.close_child()

            def wait(timeout: float) -> int | None:
                if not ended:
                    ended.append(zygote.read_exit(timeout))
                return ended[0]

            def kill() -> None:
                ended[:] = [zygote.kill_run()]

            return self._communicate(fds, data, start, {}, wait, kill,
                                     lambda: zygote.oom_kills() > kills)
        finally:
            if zygote is not None:
                if not ended:
                    zygote.kill_run()
                self._pool.release(zygote)
            fds.close()

    def _request(self, request: dict, fds: list[int]) -> tuple[Zygote, int]:
        """Hand a run to an idle server within this sandbox's limits; the server, and its
        cgroup's OOM kills before the run."""
        assert self._pool is not None
        zygote = self._pool.acquire()
        try:
            zygote.bound(self.limits.memory_bytes, self.limits.max_processes,
                         self.limits.cpu_cores)
            kills = zygote.oom_kills()
            zygote.request(request, fds)
        except (ZygoteError, OSError) as error:
            zygote.last = True
            self._pool.release(zygote)  # it is gone: the pool ends it
            raise SandboxError(f"the warm sandbox failed: {error}") from None
        return zygote, kills

    def _communicate(
        self, fds: _Fds, data: bytes, start: float, watch: dict[int, Callable[[], bool]],
        wait: Callable[[float], int | None], kill: Callable[[], None],
        out_of_memory: Callable[[], bool],
    ) -> ExecResult:
        """Feed the code once the interpreter is ready and collect the output until the run
        ends or overruns. The wall-time limit counts from the moment the interpreter is ready
        for the code (a slow start, or a wait for a warm server, is not the program's time);
        until then :data:`_START_TIMEOUT_S` bounds the start. ``watch`` maps more fds to read
        to their handlers (which say whether to keep watching); ``wait(timeout)`` gives the exit
        status (``None``: still running, or, before the deadline, its warm server died: a
        kill); ``kill`` ends the run; ``out_of_memory`` says whether the kernel killed a process
        of it for memory."""
        limits = self.limits
        deadline = start + _START_TIMEOUT_S
        out: dict[int, bytearray] = {fds.stdout: bytearray(), fds.stderr: bytearray()}
        channel = bytearray()
        selector = selectors.DefaultSelector()
        for fd in (*out, fds.answer, *watch):
            selector.register(fd, selectors.EVENT_READ)
        os.set_blocking(fds.stdin, False)
        pending = memoryview(data)
        ready = False
        stopped: ExecStatus | None = None
        code = None
        try:
            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    stopped = ExecStatus.TIMEOUT
                    break
                for key, _ in selector.select(timeout=remaining):
                    fd = key.fd
                    if fd == fds.stdin:
                        try:
                            pending = pending[os.write(fd, pending[:65536]):]
                        except OSError:
                            pending = pending[:0]
                        if not pending:
                            selector.unregister(fd)
                            fds.close_fd(fd)
                        continue
                    if fd in watch:
                        if not watch[fd]():
                            selector.unregister(fd)
                        continue
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        selector.unregister(fd)
                        continue
                    if fd == fds.answer:
                        channel += chunk
                        if len(channel) > limits.answer_channel_bytes:
                            stopped = ExecStatus.OUTPUT_LIMIT
                            break
                        if not ready and channel.startswith(b"ready\n"):
                            ready = True
                            deadline = time.monotonic() + limits.wall_time_s
                            selector.register(fds.stdin, selectors.EVENT_WRITE)
                        continue
                    out[fd] += chunk
                    if sum(len(b) for b in out.values()) > limits.max_output_bytes:
                        stopped = ExecStatus.OUTPUT_LIMIT
                        break
                if stopped:
                    break
            if stopped is None:
                code = wait(max(deadline - time.monotonic(), 0.05))
                if code is None:
                    stopped = ExecStatus.TIMEOUT
        finally:
            selector.close()
            if stopped is not None or code is None:
                kill()
        if stopped is ExecStatus.TIMEOUT and time.monotonic() < deadline:
            stopped, code = None, 128 + signal.SIGKILL  # the run's warm server died under it
        elapsed = time.monotonic() - start
        return self._result(
            code, stopped, out[fds.stdout], out[fds.stderr], channel, elapsed, out_of_memory())

    @staticmethod
    def _enter_cgroup(cgroup: RunCgroup | None, pid: int | None, fds: _Fds) -> None:
        """Move bwrap's child into ``cgroup``, then let it go on."""
        if pid is not None and cgroup is not None:
            try:
                cgroup.add(pid)
            except OSError as error:
                raise SandboxError(f"could not move the sandbox into its cgroup: {error}") from None
        fds.release_block()

    def _answer(self, channel: bytearray) -> str | None:
        """The last answer line of the channel, cut to ``max_answer_chars``."""
        answer = None
        for line in bytes(channel[: self.limits.answer_channel_bytes]).split(b"\n")[1:-1]:
            if line.startswith(b"answer "):
                try:
                    answer = line[len(b"answer "):].decode("unicode_escape")
                except UnicodeDecodeError:
                    continue
        return None if answer is None else clean_text(answer)[: self.limits.max_answer_chars]

    def _result(
        self, code: int | None, stopped: ExecStatus | None, stdout_b: bytearray,
        stderr_b: bytearray, channel: bytearray, elapsed: float, out_of_memory: bool,
    ) -> ExecResult:
        limits = self.limits
        started = channel.startswith(b"ready\n")
        answer = self._answer(channel)
        truncated = False
        if stopped is ExecStatus.OUTPUT_LIMIT:
            keep = limits.max_output_bytes
            stdout_b, stderr_b = stdout_b[:keep], stderr_b[: max(keep - len(stdout_b), 0)]
            truncated = True
        stdout = stdout_b.decode("utf-8", errors="replace")
        stderr = stderr_b.decode("utf-8", errors="replace")
        if stopped is ExecStatus.TIMEOUT and not started:
            raise SandboxError(f"the sandbox did not start Python within {_START_TIMEOUT_S:g} s")
        if stopped is None and not started:
            hint = ""
            if "bwrap:" in stderr:
                hint = (" -- bubblewrap could not set up the namespaces; inside a container, "
                        "allow user namespaces (e.g. docker --security-opt seccomp=unconfined)")
            raise SandboxError(
                f"the sandbox failed to start Python (exit status {code}): "
                f"{stderr.strip()[-2000:]}{hint}"
            )
        memory_note = (f"(memory limit: {limits.memory_bytes >> 20} MiB for the whole run; a "
                       "process of it was killed for going over)")
        if stopped is ExecStatus.TIMEOUT:
            status = stopped
            message = f"TimeoutError: the wall-time limit of {limits.wall_time_s:g} s was exceeded."
            code = None
        elif stopped is ExecStatus.OUTPUT_LIMIT:
            status = stopped
            if len(channel) > limits.answer_channel_bytes:
                message = (f"[output truncated: the program wrote more than "
                           f"{limits.answer_channel_bytes} bytes to the answer channel and was "
                           "stopped]")
            else:
                message = (f"[output truncated: the program printed more than "
                           f"{limits.max_output_bytes} bytes and was stopped]")
            code = None
        elif code == 0:
            status, message = ExecStatus.OK, memory_note if out_of_memory else ""
        elif "MemoryError" in stderr.strip().rsplit("\n", 1)[-1]:
            status = ExecStatus.MEMORY
            message = (f"(memory limit: {self._process_bytes >> 20} MiB for one process, "
                       f"{limits.memory_bytes >> 20} MiB for the whole run)")
        elif out_of_memory:
            status, message = ExecStatus.MEMORY, memory_note
        elif code == 128 + signal.SIGXCPU:
            status = ExecStatus.TIMEOUT
            message = f"TimeoutError: the CPU-time limit of {limits.cpu_time_s} s was exceeded."
        elif code is not None and code > 128:
            status = ExecStatus.KILLED
            name = _signal_name(code - 128)
            message = f"The program was killed by {name}."
            if code - 128 == signal.SIGKILL:
                message += " (It may have exceeded the memory or CPU limit.)"
        else:
            status, message = ExecStatus.ERROR, "" if stderr.strip() else f"exit status {code}"
        return ExecResult(status, stdout, stderr, answer, code, elapsed, truncated, message)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _child_pid(info: bytearray) -> int | None:
    """The pid of bwrap's child from its ``--info-fd`` report (``None``: bwrap failed before it
    started the child, and says why itself)."""
    try:
        return int(json.loads(info.decode())["child-pid"])
    except (ValueError, KeyError, TypeError):
        return None


def _read_to_end(fd: int, timeout: float) -> bytearray:
    """What ``fd`` holds until its writers close it (at most 4 KiB kept, ``timeout`` s)."""
    data = bytearray()
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0 and select.select([fd], [], [], left)[0]:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk[: max(4096 - len(data), 0)]
    return data


def _wait(proc: subprocess.Popen, timeout: float) -> int | None:
    """``proc``'s exit status (``128 + n`` for signal ``n``), or ``None`` if still running."""
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return 128 - code if code < 0 else code


def _kill(proc: subprocess.Popen) -> None:
    """Kill the sandbox's process group; bwrap's pid namespace takes every child down with it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
