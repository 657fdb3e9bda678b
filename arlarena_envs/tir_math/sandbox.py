"""A sandbox for model-written Python: one fresh bubblewrap namespace per execution.

Holds :class:`Sandbox` (``run(code) -> ExecResult``), :class:`SandboxLimits`,
:class:`ExecResult`, :class:`ExecStatus`, the errors :class:`SandboxUnavailable` /
:class:`SandboxError`, :data:`UNSAFE_ENV_VAR` and :func:`truncate_middle`.

Every execution runs in new pid, network (no interfaces but a down loopback), ipc, uts and
cgroup namespaces, on a read-only root that holds only ``/usr`` (and the ``/bin``, ``/lib``
links), the Python installation and the current environment's site-packages (mounted read-only
under ``/opt/arlarena``, so numpy and sympy import), a fresh ``/proc``, a minimal ``/dev`` and a
size-capped private tmpfs ``/tmp`` (the working and home directory). The project, ``/root``,
``/home`` and the rest of ``/etc`` do not exist inside. The code runs as an unprivileged uid
inside a user namespace that may not create further user namespaces, with limits on CPU time,
address space, processes, file size and open files; the host enforces wall time and output
size, and kills the whole pid namespace when the program ends or overruns, so no process
outlives its execution.

When the host runs as root, bwrap sets up the mounts with its privileges and then starts, as a
fresh random uid (never 0, so ``RLIMIT_NPROC`` applies), a second, unprivileged bwrap that
creates the user namespace; as any other user one unprivileged bwrap does everything.

Without ``bwrap`` the sandbox refuses to start unless the caller opts in to running code with
resource limits only (``unsafe=True`` or ``ARLARENA_UNSAFE_SANDBOX=1``), which is logged as a
warning every time such a sandbox is created: that mode gives no isolation at all.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import selectors
import shutil
import signal
import site
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path

__all__ = [
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

_INSIDE = "/opt/arlarena"
_SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime")
_UID_RANGE = (1_000_000, 1_000_000_000)
_PRELUDE = (Path(__file__).with_name("_prelude.py")).read_text(encoding="utf-8")


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

    ``memory_bytes`` is an address-space limit per process, so the most a run can hold is about
    ``max_processes * memory_bytes`` (plus ``tmp_bytes`` in ``/tmp``).
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

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if value <= 0:
                raise ValueError(f"SandboxLimits.{name} must be positive, got {value}")


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one execution.

    Attributes:
        status: how it ended.
        stdout, stderr: what it printed (decoded, cut at the output allowance with a marker).
        answer: the last value passed to ``final_answer``, or ``None``.
        exit_code: the exit status (``128 + n`` for signal ``n``), ``None`` if killed by the host.
        wall_time_s: seconds from start to end, sandbox set-up included.
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


def truncate_middle(text: str, max_chars: int) -> str:
    """Cut ``text`` to at most ``max_chars`` characters, keeping its head and tail.

    >>> short = truncate_middle("0123456789" * 20, 60)
    >>> len(short) <= 60, short[:4], short[-4:], "characters cut" in short
    (True, '0123', '6789', True)
    """
    if len(text) <= max_chars:
        return text
    marker = "\n[... {} characters cut ...]\n"
    room = max(max_chars - len(marker.format(len(text))), 0)
    head, tail = room // 2, room - room // 2
    return text[:head] + marker.format(len(text) - head - tail) + (text[-tail:] if tail else "")


@dataclass(frozen=True)
class _Layout:
    """Where the interpreter and its packages are on the host and inside the sandbox."""

    python: str
    mounts: tuple[tuple[str, str], ...] = ()
    site_dirs: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


def _under(path: Path, roots: Sequence[str]) -> bool:
    return any(path == Path(r) or path.is_relative_to(r) for r in roots)


def _system_roots() -> list[str]:
    roots = ["/usr"]
    roots += [d for d in _SYSTEM_LINKS if os.path.isdir(d) and not os.path.islink(d)]
    return roots


def _detect_layout(site_dirs: Sequence[str] | None) -> _Layout:
    """Map this interpreter and its site-packages into the sandbox (read-only mounts)."""
    base = Path(sys.base_prefix).resolve()
    exe = Path(getattr(sys, "_base_executable", "") or sys.executable).resolve()
    if not exe.is_relative_to(base):
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        exe = (base / "bin" / version).resolve()
    roots = _system_roots()
    mounts: list[tuple[str, str]] = []
    env: dict[str, str] = {}
    python = str(exe)
    if not _under(base, roots):
        inside = f"{_INSIDE}/python"
        mounts.append((str(base), inside))
        python = f"{inside}/{exe.relative_to(base)}"
        libdir = Path(sysconfig.get_config_var("LIBDIR") or base / "lib").resolve()
        if libdir.is_relative_to(base):
            env["LD_LIBRARY_PATH"] = f"{inside}/{libdir.relative_to(base)}"
    inside_sites = []
    candidates = site_dirs if site_dirs is not None else site.getsitepackages()
    seen: set[Path] = set()
    for raw in candidates:
        path = Path(raw).resolve()
        if not path.is_dir() or path in seen or path.is_relative_to(base) or _under(path, roots):
            continue
        seen.add(path)
        target = f"{_INSIDE}/site/{len(inside_sites)}"
        mounts.append((str(path), target))
        inside_sites.append(target)
    return _Layout(python, tuple(mounts), tuple(inside_sites), env)


_CHILD_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONIOENCODING": "utf-8",
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
    ) -> None:
        """
        Args:
            limits: resource limits (defaults: :class:`SandboxLimits`).
            unsafe: run without bubblewrap, with resource limits only. ``None`` reads
                ``ARLARENA_UNSAFE_SANDBOX``. Never use it for code you do not trust.
            site_dirs: site-packages dirs to expose (default: this environment's).
        """
        self.limits = limits or SandboxLimits()
        if unsafe is None:
            unsafe = os.environ.get(UNSAFE_ENV_VAR, "").strip().lower() in {"1", "true", "yes"}
        self.unsafe = bool(unsafe)
        self.is_root = os.geteuid() == 0
        self._bwrap = shutil.which("bwrap")
        self._setpriv = shutil.which("setpriv")
        if self.unsafe:
            logger.warning(
                "UNSAFE sandbox: model code runs WITHOUT isolation (resource limits only; "
                "%s is set or unsafe=True). It can read and write your files, use the network "
                "and leave processes behind%s.",
                UNSAFE_ENV_VAR, ", and as root no process limit applies" if self.is_root else "",
            )
            self._layout = _Layout(sys.executable, site_dirs=tuple(site_dirs or ()))
            return
        if self._bwrap is None:
            raise SandboxUnavailable(
                "bubblewrap (`bwrap`) is not installed; the TIR maths sandbox needs it. Install "
                "the `bubblewrap` package (Debian/Ubuntu: `apt-get install -y bubblewrap`), or, "
                f"only for code you trust, set {UNSAFE_ENV_VAR}=1 to run with resource limits "
                "alone."
            )
        if self.is_root and self._setpriv is None:
            raise SandboxUnavailable(
                "`setpriv` (util-linux) is needed to drop root privileges inside the sandbox; "
                "install the `util-linux` package."
            )
        self._layout = _detect_layout(site_dirs)

    # -- command lines -------------------------------------------------------------------------
    def _mount_args(self) -> list[str]:
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
            for directory in (_INSIDE, f"{_INSIDE}/site"):
                args += ["--perms", "0755", "--dir", directory]
        for source, target in self._layout.mounts:
            args += ["--ro-bind", source, target]
        args += ["--proc", "/proc", "--dev", "/dev"]
        args += ["--perms", "1777", "--size", str(self.limits.tmp_bytes), "--tmpfs", "/tmp"]
        args += ["--remount-ro", "/", "--remount-ro", "/dev", "--chdir", "/tmp", "--clearenv"]
        for key, value in {**_CHILD_ENV, **self._layout.env}.items():
            args += ["--setenv", key, value]
        return args

    def _python_args(self, answer_fd: int) -> list[str]:
        config = {
            "answer_fd": answer_fd,
            "site_dirs": list(self._layout.site_dirs),
            "limits": {
                "memory_bytes": self.limits.memory_bytes,
                "cpu_time_s": int(self.limits.cpu_time_s),
                "max_processes": self.limits.max_processes,
                "max_file_bytes": self.limits.max_file_bytes,
                "max_open_files": self.limits.max_open_files,
            },
        }
        return [self._layout.python, "-s", "-P", "-u", "-B", "-c", _PRELUDE, json.dumps(config)]

    def _command(self, answer_fd: int, args_fd: int) -> tuple[list[str], bytes]:
        """The argv to start and the NUL-separated options fed to bwrap through ``--args``."""
        namespaces = [
            "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try", "--hostname", "sandbox", "--die-with-parent", "--new-session",
        ]
        python = self._python_args(answer_fd)
        assert self._bwrap is not None
        if self.is_root:
            uid = str(_UID_RANGE[0] + secrets.randbelow(_UID_RANGE[1] - _UID_RANGE[0]))
            options = namespaces + self._mount_args()
            options += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
            inner = [
                self._setpriv or "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                "--inh-caps=-all", "--no-new-privs", "--",
                self._bwrap, "--unshare-user", "--disable-userns", "--dev-bind", "/", "/",
                "--die-with-parent", "--", *python,
            ]
        else:
            options = ["--unshare-user", "--disable-userns", *namespaces, *self._mount_args()]
            inner = python
        data = b"".join(option.encode() + b"\0" for option in options)
        return [self._bwrap, "--args", str(args_fd), "--", *inner], data

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
        answer_r, answer_w = os.pipe()
        args_r = args_w = -1
        workdir = None
        try:
            if self.unsafe:
                workdir = tempfile.TemporaryDirectory(prefix="arlarena-unsafe-")
                argv = self._python_args(answer_w)
                env = {**_CHILD_ENV, "HOME": workdir.name, "TMPDIR": workdir.name}
                pass_fds: tuple[int, ...] = (answer_w,)
            else:
                args_r, args_w = os.pipe()
                argv, options = self._command(answer_w, args_r)
                if len(options) >= 60_000:
                    raise SandboxError("sandbox options too long for a pipe")
                os.write(args_w, options)
                os.close(args_w)
                args_w = -1
                env = {"PATH": _CHILD_ENV["PATH"]}
                pass_fds = (answer_w, args_r)
            start = time.monotonic()
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=pass_fds, start_new_session=True, env=env,
                cwd=workdir.name if workdir else "/",
            )
        except BaseException:
            for fd in (answer_r, answer_w, args_r, args_w):
                if fd >= 0:
                    os.close(fd)
            if workdir:
                workdir.cleanup()
            raise
        os.close(answer_w)
        if args_r >= 0:
            os.close(args_r)
        try:
            return self._communicate(proc, data, answer_r, start)
        finally:
            os.close(answer_r)
            if workdir:
                workdir.cleanup()

    def _communicate(
        self, proc: subprocess.Popen, data: bytes, answer_fd: int, start: float
    ) -> ExecResult:
        limits = self.limits
        deadline = start + limits.wall_time_s
        assert proc.stdin and proc.stdout and proc.stderr
        stdout_fd, stderr_fd = proc.stdout.fileno(), proc.stderr.fileno()
        out: dict[int, bytearray] = {stdout_fd: bytearray(), stderr_fd: bytearray()}
        channel = bytearray()
        selector = selectors.DefaultSelector()
        for fd in (*out, answer_fd):
            selector.register(fd, selectors.EVENT_READ)
        stdin_fd = proc.stdin.fileno()
        os.set_blocking(stdin_fd, False)
        selector.register(stdin_fd, selectors.EVENT_WRITE)
        pending = memoryview(data)
        stopped: ExecStatus | None = None
        try:
            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    stopped = ExecStatus.TIMEOUT
                    break
                for key, _ in selector.select(timeout=remaining):
                    fd = key.fd
                    if fd == stdin_fd:
                        try:
                            pending = pending[os.write(fd, pending[:65536]):]
                        except (BrokenPipeError, OSError):
                            pending = pending[:0]
                        if not pending:
                            selector.unregister(fd)
                            proc.stdin.close()
                        continue
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        selector.unregister(fd)
                        continue
                    if fd == answer_fd:
                        channel += chunk[: 1 << 20]
                        continue
                    out[fd] += chunk
                    if sum(len(b) for b in out.values()) > limits.max_output_bytes:
                        stopped = ExecStatus.OUTPUT_LIMIT
                        break
                if stopped:
                    break
            if stopped is None:
                try:
                    proc.wait(timeout=max(deadline - time.monotonic(), 0.05))
                except subprocess.TimeoutExpired:
                    stopped = ExecStatus.TIMEOUT
        finally:
            selector.close()
            if stopped is not None or proc.poll() is None:
                _kill(proc)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if not stream.closed:
                    stream.close()
        elapsed = time.monotonic() - start
        return self._result(proc, stopped, out[stdout_fd], out[stderr_fd], channel, elapsed)

    def _result(
        self, proc: subprocess.Popen, stopped: ExecStatus | None, stdout_b: bytearray,
        stderr_b: bytearray, channel: bytearray, elapsed: float,
    ) -> ExecResult:
        limits = self.limits
        lines = channel.decode("utf-8", errors="replace").splitlines()
        started = bool(lines) and lines[0] == "ready"
        answer = None
        for line in lines[1:]:
            if line.startswith("answer "):
                try:
                    value = json.loads(line[len("answer "):])
                except json.JSONDecodeError:
                    continue
                if isinstance(value, str):
                    answer = value
        truncated = False
        if stopped is ExecStatus.OUTPUT_LIMIT:
            keep = limits.max_output_bytes
            stdout_b, stderr_b = stdout_b[:keep], stderr_b[: max(keep - len(stdout_b), 0)]
            truncated = True
        stdout = stdout_b.decode("utf-8", errors="replace")
        stderr = stderr_b.decode("utf-8", errors="replace")
        code = proc.returncode
        if code is not None and code < 0:
            code = 128 - code
        if stopped is None and not started:
            hint = ""
            if "bwrap:" in stderr:
                hint = (" -- bubblewrap could not set up the namespaces; inside a container, "
                        "allow user namespaces (e.g. docker --security-opt seccomp=unconfined)")
            raise SandboxError(
                f"the sandbox failed to start Python (exit status {code}): "
                f"{stderr.strip()[-2000:]}{hint}"
            )
        if stopped is ExecStatus.TIMEOUT:
            status = stopped
            message = f"TimeoutError: the wall-time limit of {limits.wall_time_s:g} s was exceeded."
            code = None
        elif stopped is ExecStatus.OUTPUT_LIMIT:
            status = stopped
            message = (f"[output truncated: the program printed more than "
                       f"{limits.max_output_bytes} bytes and was stopped]")
            code = None
        elif code == 0:
            status, message = ExecStatus.OK, ""
        elif "MemoryError" in stderr.strip().rsplit("\n", 1)[-1]:
            status = ExecStatus.MEMORY
            message = f"(memory limit: {limits.memory_bytes >> 20} MiB)"
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
