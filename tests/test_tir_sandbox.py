"""The TIR Math sandbox: normal runs, result types, and a battery of hostile programs.

Every hostile case asserts the result type the sandbox reports and that the host is untouched;
the ``sandbox`` fixture then checks that the next execution still works. The fixture runs each
case twice: forked by a warm server, and in a bwrap of its own (cold). The warm cases also
check that a run leaves nothing (files, processes, IPC objects, random state) for the next.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

import pytest

from arlarena_envs.tir_math.sandbox import (
    MAX_ANSWER_CHARS,
    UNSAFE_ENV_VAR,
    ExecStatus,
    Sandbox,
    SandboxLimits,
    SandboxUnavailable,
)

PROJECT = Path(__file__).resolve().parents[1]
SECRET = "tir-sandbox-secret-7f3a9c"  # appears only in this file: leaks if the sandbox reads it
FORK_LOOP = """
import os, time
children = 0
for _ in range(64):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    children += 1
print(children)
"""
LIMITS = SandboxLimits(wall_time_s=3.0, cpu_time_s=2, memory_bytes=1 << 30, max_processes=16)



@pytest.fixture(scope="module", params=[True, False], ids=["warm", "cold"])
def shared(request: pytest.FixtureRequest) -> Sandbox:
    """Every run forked by a warm server (as root), and every run in a bwrap of its own."""
    return Sandbox(LIMITS, warm=request.param)


@pytest.fixture
def sandbox(shared: Sandbox):
    yield shared
    after = shared.run("print('still works')")
    assert after.status is ExecStatus.OK and after.stdout == "still works\n"


def _host_processes_with(token: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if token in cmdline:
                found.append(f"{entry.name}: {cmdline}")
    return found


# -- normal behaviour ------------------------------------------------------------------------------
def test_runs_code_and_captures_both_streams(sandbox: Sandbox) -> None:
    result = sandbox.run("import sys\nprint('out')\nprint('err', file=sys.stderr)")
    assert result.status is ExecStatus.OK and result.exit_code == 0
    assert (result.stdout, result.stderr) == ("out\n", "err\n")
    assert result.output() == "out\nerr"


def test_final_answer_is_recorded_and_stops_the_program(sandbox: Sandbox) -> None:
    result = sandbox.run("print('before')\nfinal_answer(3 ** 4)\nprint('after')")
    assert result.ok and result.answer == "81" and result.stdout == "before\n"


def test_numpy_and_sympy_import() -> None:
    result = Sandbox(SandboxLimits(wall_time_s=20.0)).run(
        "import numpy as np, sympy as sp\nprint(int(np.arange(5).sum()), sp.simplify(sp.sqrt(8)))")
    assert result.ok, result.stderr
    assert result.stdout == "10 2*sqrt(2)\n"


def test_error_shows_only_the_programs_traceback(sandbox: Sandbox) -> None:
    result = sandbox.run("x = 1\ny = x / 0\n")
    assert result.status is ExecStatus.ERROR and result.exit_code == 1
    assert "ZeroDivisionError" in result.stderr and 'File "<code>", line 2' in result.stderr
    assert "y = x / 0" in result.stderr and "prelude" not in result.stderr.lower()


def test_syntax_error_and_exit_codes(sandbox: Sandbox) -> None:
    assert "SyntaxError" in sandbox.run("def (:").stderr
    assert sandbox.run("import sys; sys.exit(3)").exit_code == 3
    assert sandbox.run("import sys; sys.exit(0)").status is ExecStatus.OK


def test_stdin_is_empty_and_tmp_is_private_and_writable(sandbox: Sandbox) -> None:
    name = f"tir-{uuid.uuid4().hex}"
    code = (f"import os, sys\nprint(repr(sys.stdin.read()))\n"
            f"open('/tmp/{name}', 'w').write('x')\nprint(os.listdir('/tmp'))")
    result = sandbox.run(code)
    assert result.ok, result.stderr
    assert result.stdout == f"''\n['{name}']\n"
    assert not Path(f"/tmp/{name}").exists()


def test_refuses_oversized_code(sandbox: Sandbox) -> None:
    small = Sandbox(SandboxLimits(max_code_bytes=100))
    result = small.run("#" * 200)
    assert result.status is ExecStatus.ERROR and "longer than 100 bytes" in result.message


def test_parallel_runs_are_independent(sandbox: Sandbox) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda i: sandbox.run(f"final_answer({i} * {i})"), range(8)))
    assert [r.answer for r in results] == [str(i * i) for i in range(8)]


# -- hostile programs -------------------------------------------------------------------------
LEFTOVERS = """
import ctypes, os
open('/tmp/left', 'w').write('secret')
os.chmod('/tmp/left', 0o644)
os.makedirs('/tmp/locked/deeper')
open('/tmp/locked/deeper/file', 'w').write('x')
os.chmod('/tmp/locked', 0)
libc = ctypes.CDLL(None, use_errno=True)
print('shm', libc.shmget(0x5EED, 4096, 0o1666) >= 0, 'msg', libc.msgget(0x5EED, 0o1666) >= 0)
if os.fork() == 0:
    os.setsid()
    os.execv('/usr/bin/sleep', ['sleep', '30'])
"""
LOOK = """
import os
others = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid(),
                                                                             os.getppid())]
ipc = [open(f'/proc/sysvipc/{kind}').read().splitlines()[1:] for kind in ('shm', 'msg', 'sem')]
print(sorted(os.listdir('/tmp')), others, ipc)
"""


def test_a_run_leaves_nothing_for_the_next(sandbox: Sandbox) -> None:
    """Files (a world-readable one, a locked directory), a daemon and System V IPC objects of
    one run are gone when the next starts: warm, the same server cleared them (a server that
    cannot clear a run's leftovers retires, as after a tree too deep to delete)."""
    from arlarena_envs.tir_math import _warm

    def servers() -> set[int]:
        return {zygote.process.pid for zygote in list(_warm._ALL) if zygote.alive()}

    assert sandbox.run("pass").ok
    before = servers()
    first = sandbox.run(LEFTOVERS)
    assert first.ok and first.stdout == "shm True msg True\n", (first.stdout, first.stderr)
    look = sandbox.run(LOOK)
    assert look.ok and look.stdout == "[] [] [[], [], []]\n", (look.stdout, look.stderr)
    assert servers() == before
    deep = "import os\nfor _ in range(1500):\n    os.mkdir('d')\n    os.chdir('d')"
    assert sandbox.run(deep).ok and sandbox.run(LOOK).stdout == "[] [] [[], [], []]\n"
    assert len(before - servers()) == (1 if sandbox.warm else 0)  # the deep tree's retired


def test_runs_draw_fresh_random_numbers(sandbox: Sandbox) -> None:
    code = ("import random, numpy, sympy.core.random as r\n"
            "print(random.random(), numpy.random.rand(), r.rng.random())")
    first, second = (sandbox.run(code).stdout.split() for _ in range(2))
    assert len(first) == 3 and all(a != b for a, b in zip(first, second, strict=True))


def test_a_warm_run_finds_its_preload_imported(sandbox: Sandbox) -> None:
    result = sandbox.run("import sys\nprint('sympy' in sys.modules, 'numpy' in sys.modules)")
    preloaded = sandbox.warm and sandbox.memory_bound.startswith("cgroup")
    assert result.stdout == f"{preloaded} {preloaded}\n"
    assert Sandbox(LIMITS).warm == (os.geteuid() == 0) and not Sandbox(LIMITS, warm=False).warm


def test_a_forked_host_gets_servers_of_its_own(sandbox: Sandbox) -> None:
    """A ``fork`` worker and its parent both run code, neither through the other's server."""
    assert sandbox.run("print(1)").ok
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write, sandbox.run("print(6 * 7)").stdout.encode())
        finally:
            os._exit(0)
    os.close(write)
    mine = sandbox.run("print(7 * 7)")
    os.waitpid(pid, 0)
    child = os.read(read, 100)
    os.close(read)
    assert child == b"42\n" and mine.stdout == "49\n"


def test_a_kill_that_crosses_the_runs_end_is_ignored() -> None:
    """The host gives up on a run just as it ends: the server has reported the end already and
    takes the late ``kill`` as nothing."""
    box = Sandbox(LIMITS)
    if not box.warm:
        pytest.skip("warm servers need root")
    assert box.run("pass").ok
    zygote = box._pool.acquire()
    zygote.control.send(b"kill")
    box._pool.release(zygote)
    assert box.run("print(3)").stdout == "3\n" and zygote.alive()


def test_a_run_that_closes_its_pipes_and_overruns_keeps_its_server() -> None:
    """With every pipe closed the host waits on the server for the run's end; when the deadline
    passes first, the run is killed and the server, which did nothing wrong, serves again."""
    from arlarena_envs.tir_math import _warm

    box = Sandbox(dataclasses.replace(LIMITS, wall_time_s=1.0))
    if not box.warm:
        pytest.skip("warm servers need root")
    assert box.run("pass").ok
    servers = {z for z in _warm._ALL if z.alive()}
    result = box.run("import os, time\nos.closerange(0, 1024)\ntime.sleep(30)")
    assert result.status is ExecStatus.TIMEOUT, (result.status, result.message)
    assert {z for z in _warm._ALL if z.alive()} == servers
    assert box.run("print(5)").stdout == "5\n"


def test_a_pool_keeps_at_most_max_idle_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from arlarena_envs.tir_math import _warm

    box = Sandbox(SandboxLimits(wall_time_s=5.0, tmp_bytes=3 << 20))  # a pool of its own
    if not box.warm:
        pytest.skip("warm servers need root")
    monkeypatch.setattr(_warm, "MAX_IDLE", 1)
    before = set(_warm._ALL)
    with ThreadPoolExecutor(3) as threads:
        runs = list(threads.map(lambda _: box.run("import time; time.sleep(0.5)"), range(3)))
    assert all(r.ok for r in runs)
    assert len(box._pool._idle) == 1  # three ran at once; two were ended on release
    assert sum(zygote.alive() for zygote in set(_warm._ALL) - before) == 1
    assert box.run("print(5)").stdout == "5\n"


def test_a_dead_warm_server_is_replaced() -> None:
    from arlarena_envs.tir_math import _warm

    box = Sandbox(LIMITS)
    if not box.warm:
        pytest.skip("warm servers need root")
    assert box.run("print(1)").ok
    for zygote in list(_warm._ALL):
        if zygote.alive():
            os.killpg(zygote.process.pid, signal.SIGKILL)
            zygote.process.wait()  # dead, not dying: a dying one is the mid-run case below
    assert box.run("print(2)").stdout == "2\n"
    busy = set(_warm._ALL) - set(box._pool._idle)

    def kill_the_server() -> None:  # the one the next run takes, once it has started
        time.sleep(0.5)
        for zygote in set(_warm._ALL) - busy:
            if zygote.alive() and zygote not in box._pool._idle:
                os.killpg(zygote.process.pid, signal.SIGKILL)

    import threading

    killer = threading.Thread(target=kill_the_server)
    killer.start()
    start = time.monotonic()
    result = box.run("import time\nprint('started', flush=True)\ntime.sleep(2.5)")
    killer.join()
    assert result.status is ExecStatus.KILLED and result.stdout == "started\n", result
    assert time.monotonic() - start < 2.0
    assert box.run("print(4)").stdout == "4\n"


def test_cannot_read_etc_shadow(sandbox: Sandbox) -> None:
    result = sandbox.run("print(open('/etc/shadow').read())")
    assert result.status is ExecStatus.ERROR
    assert "FileNotFoundError" in result.stderr and "root:" not in result.stdout


def test_cannot_see_the_project_or_home(sandbox: Sandbox) -> None:
    home = os.path.expanduser("~")
    code = f"""
import os
for path in [{str(PROJECT)!r}, {__file__!r}, {home!r}, '/work', '/root', '/home']:
    print(path, os.path.exists(path))
print(os.environ['HOME'], os.listdir(os.environ['HOME']))
print(open({__file__!r}).read())
"""
    result = sandbox.run(code)
    assert result.status is ExecStatus.ERROR and "FileNotFoundError" in result.stderr
    lines = result.stdout.splitlines()
    assert all(line.endswith(" False") for line in lines[:6]), lines
    assert lines[6] == "/tmp []"
    assert SECRET not in result.stdout + result.stderr


def test_cannot_write_outside_tmp(sandbox: Sandbox) -> None:
    name = f"tir-{uuid.uuid4().hex}"
    targets = ["/", "/usr", "/etc", "/dev", "/opt/arlarena", str(PROJECT), os.path.expanduser("~")]
    code = f"""
import os
for directory in {targets!r}:
    try:
        with open(os.path.join(directory, {name!r}), 'w') as f:
            f.write('pwned')
        print('WROTE', directory)
    except OSError as error:
        print('refused', directory, type(error).__name__)
"""
    result = sandbox.run(code)
    assert result.ok, result.stderr
    assert "WROTE" not in result.stdout and result.stdout.count("refused") == len(targets)
    for directory in targets:
        assert not (Path(directory) / name).exists()


def test_loopback_is_up_but_only_the_sandboxes_own(sandbox: Sandbox) -> None:
    code = """
import socket, threading
server = socket.create_server(('127.0.0.1', 0))
port = server.getsockname()[1]
threading.Thread(target=lambda: server.accept()[0].sendall(b'pong'), daemon=True).start()
with socket.create_connection(('127.0.0.1', port), timeout=2) as client:
    print(client.recv(4).decode())
print(sorted(name for _, name in socket.if_nameindex()))
"""
    result = sandbox.run(code)
    assert result.ok, result.stderr
    assert result.stdout == "pong\n['lo']\n"


def test_cannot_reach_a_host_server_on_loopback(sandbox: Sandbox) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.5)
        port = server.getsockname()[1]
        result = sandbox.run(f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), "
                             "timeout=2)\nprint('CONNECTED')")
        with pytest.raises(socket.timeout):
            server.accept()
    assert result.status is ExecStatus.ERROR and "CONNECTED" not in result.stdout
    assert "Error" in result.stderr


def test_cannot_resolve_host_names(sandbox: Sandbox) -> None:
    result = sandbox.run("import socket\nprint(socket.getaddrinfo('pypi.org', 443))")
    assert result.status is ExecStatus.ERROR and "gaierror" in result.stderr


def test_busy_loop_hits_the_cpu_limit(sandbox: Sandbox) -> None:
    start = time.monotonic()
    result = sandbox.run("while True:\n    pass")
    assert result.status is ExecStatus.TIMEOUT
    assert time.monotonic() - start < LIMITS.wall_time_s + 1.5


def test_sleep_hits_the_wall_time_limit(sandbox: Sandbox) -> None:
    start = time.monotonic()
    result = sandbox.run("import time\nprint('sleeping', flush=True)\ntime.sleep(60)")
    elapsed = time.monotonic() - start
    assert result.status is ExecStatus.TIMEOUT and "wall-time" in result.message
    assert result.stdout == "sleeping\n"
    assert LIMITS.wall_time_s - 0.1 <= elapsed < LIMITS.wall_time_s + 1.5


def test_allocating_8_gib_is_a_memory_error(sandbox: Sandbox) -> None:
    result = sandbox.run("block = bytearray(8 << 30)\nprint(len(block))")
    assert result.status is ExecStatus.MEMORY and "MemoryError" in result.stderr


def test_bounded_fork_loop_is_capped(sandbox: Sandbox) -> None:
    start = time.monotonic()
    result = sandbox.run(FORK_LOOP)
    assert result.ok, result.stderr
    assert int(result.stdout) < LIMITS.max_processes
    assert time.monotonic() - start < 2.0, "the sleeping children must die with the run"


def test_printing_100_mb_is_cut(sandbox: Sandbox) -> None:
    start = time.monotonic()
    result = sandbox.run("import sys\nsys.stdout.write('x' * 100_000_000)")
    assert result.status is ExecStatus.OUTPUT_LIMIT and result.truncated
    assert len(result.stdout) <= LIMITS.max_output_bytes
    assert "output truncated" in result.output()
    assert time.monotonic() - start < 2.5


def test_killing_its_parents_only_ends_the_run(sandbox: Sandbox) -> None:
    code = """
import os, signal
for pid in (1, os.getppid(), -1):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError as error:
        print(pid, type(error).__name__, flush=True)
import time
time.sleep(1)
"""
    result = sandbox.run(code)
    assert result.status in {ExecStatus.KILLED, ExecStatus.OK, ExecStatus.ERROR}
    assert "1 PermissionError" in result.stdout


def test_a_daemon_does_not_outlive_the_run(sandbox: Sandbox) -> None:
    token = f"{time.time_ns() % 10**6}.{os.getpid()}"
    code = f"""
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv('/usr/bin/sleep', ['sleep', '{token}'])
    os._exit(0)
os.wait()
print('parent exits')
"""
    start = time.monotonic()
    result = sandbox.run(code)
    assert result.ok and result.stdout == "parent exits\n", result.stderr
    assert time.monotonic() - start < 2.0
    deadline = time.monotonic() + 2
    while _host_processes_with(f"sleep {token}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _host_processes_with(f"sleep {token}") == []


def test_cannot_become_root(sandbox: Sandbox) -> None:
    result = sandbox.run("import os\nprint(os.getuid(), os.geteuid())\nos.setuid(0)")
    assert result.status is ExecStatus.ERROR
    assert "0" not in result.stdout.split()
    assert "Error" in result.stderr


def test_ctypes_tricks(sandbox: Sandbox) -> None:
    code = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print('setuid', libc.setuid(0), os.getuid() != 0)
print('unshare-user', libc.unshare(0x10000000))
print('mount', libc.mount(b'none', b'/tmp', b'tmpfs', 0, None))
print('chroot', libc.chroot(b'/tmp'))
"""
    result = sandbox.run(code)
    assert result.ok, result.stderr
    assert result.stdout.split("\n")[:4] == [
        "setuid -1 True", "unshare-user -1", "mount -1", "chroot -1"]
    crash = sandbox.run("import ctypes\nctypes.string_at(0)")
    assert crash.status is ExecStatus.KILLED and "SIGSEGV" in crash.message


def test_tmp_is_size_capped(sandbox: Sandbox) -> None:
    small = Sandbox(SandboxLimits(tmp_bytes=4 << 20, max_file_bytes=64 << 20))
    result = small.run("open('/tmp/big', 'wb').write(b'0' * (16 << 20))")
    assert result.status is ExecStatus.ERROR and "No space left" in result.stderr


HOLDERS = """
import os, sys, time
read, write = os.pipe()
children = {{}}
for i in range(3):
    pid = os.fork()
    if pid == 0:
        try:
            block = b'\\1' * ({size} << 20)
            os.write(write, b'h%d' % i)
        except MemoryError:
            os.write(write, b'm%d' % i)
        time.sleep(30)
        os._exit(0)
    children[i] = pid
os.close(write)
os.set_blocking(read, False)
seen = b''
deadline = time.monotonic() + 1.5
while seen.count(b'h') + seen.count(b'm') < 3 and time.monotonic() < deadline:
    try:
        seen += os.read(read, 16)
    except BlockingIOError:
        time.sleep(0.02)
time.sleep(0.2)
alive = [i for i, pid in children.items() if os.waitpid(pid, os.WNOHANG) == (0, 0)]
print('held', sum(b'h%d' % i in seen for i in alive))
"""
BUDGET = SandboxLimits(wall_time_s=8.0, cpu_time_s=6, memory_bytes=300 << 20,
                       min_process_bytes=64 << 20)


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
@pytest.mark.parametrize("cgroups", [True, False], ids=["cgroup-if-any", "rlimits"])
def test_memory_is_bounded_for_the_run_as_a_whole(cgroups: bool, warm: bool) -> None:
    """Three children of 120 MiB each: never all three alive and holding at once within a
    300 MiB budget (the OOM killer may take one that already held its block)."""
    box = Sandbox(BUDGET, cgroups=cgroups, warm=warm)
    result = box.run(HOLDERS.format(size=120))
    assert result.ok, (result.stderr, result.message)
    held = int(result.stdout.split()[1])
    assert held < 3, box.memory_bound
    if box.memory_bound.startswith("cgroup"):
        assert held >= 1 and "whole run" in result.message  # the OOM killer picks who goes
        one = box.run("block = b'\\1' * (200 << 20)\nprint(len(block) >> 20)")
        assert one.ok and one.stdout == "200\n", one.message
    else:
        assert held == 0 and box.memory_bound.startswith("rlimits: RLIMIT_AS 75 MiB x")
    assert box.run("print('fine')").stdout == "fine\n"


def test_flooding_the_answer_channel_is_stopped(sandbox: Sandbox) -> None:
    """300 MiB written to every inherited fd (the answer channel among them) costs the host
    nothing and stops the program."""
    code = """
import os
chunk = b'x' * (1 << 20)
for _ in range(300):
    for fd in os.listdir('/proc/self/fd'):
        if int(fd) > 2:
            try:
                os.write(int(fd), chunk)
            except OSError:
                pass
"""
    tracemalloc.start()
    try:
        start = time.monotonic()
        result = sandbox.run(code)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.status is ExecStatus.OUTPUT_LIMIT and "answer channel" in result.message
    assert peak < 4 << 20 and time.monotonic() - start < 2.5


@pytest.mark.parametrize("length", [50_000, 1_000_000])
def test_a_forged_answer_line_is_capped(sandbox: Sandbox, length: int) -> None:
    code = f"""
import os
for fd in [int(fd) for fd in os.listdir('/proc/self/fd') if int(fd) > 2]:
    try:
        os.write(fd, b'answer ' + b'7' * {length} + b'\\n')
    except OSError:
        pass
"""
    result = sandbox.run(code)
    assert result.answer is None or len(result.answer) <= MAX_ANSWER_CHARS
    if length == 50_000:
        assert result.answer == "7" * MAX_ANSWER_CHARS
    else:
        assert result.status is ExecStatus.OUTPUT_LIMIT and result.answer is None
    long = sandbox.run(f"final_answer('\\u00e9' * {length})")
    assert long.answer == "\u00e9" * MAX_ANSWER_CHARS


def test_no_new_user_namespace_and_no_capabilities(sandbox: Sandbox) -> None:
    code = """
import subprocess, threading
status = dict(line.split(':\\t', 1) for line in open('/proc/self/status').read().splitlines())
print(status['CapEff'], status['CapPrm'], status['NoNewPrivs'])
print(subprocess.run(['unshare', '--user', 'true']).returncode != 0)
thread = threading.Thread(target=print, args=('thread',))
thread.start()
thread.join()
"""
    result = sandbox.run(code)
    assert result.ok, result.stderr
    assert result.stdout.splitlines() == ["0000000000000000 0000000000000000 1", "True", "thread"]


# -- set-up errors and modes --------------------------------------------------------------------
def test_missing_bwrap_names_the_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(UNSAFE_ENV_VAR, raising=False)
    with pytest.raises(SandboxUnavailable, match="apt-get install -y bubblewrap"):
        Sandbox()


def test_unsafe_mode_warns_every_time_and_still_limits(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(UNSAFE_ENV_VAR, "1")
    with caplog.at_level(logging.WARNING, logger="arlarena_envs.tir_math.sandbox"):
        first, second = Sandbox(LIMITS), Sandbox(LIMITS)
    assert sum("UNSAFE" in r.getMessage() for r in caplog.records) == 2
    assert first.unsafe and second.unsafe
    assert first.run("final_answer(7)").answer == "7"
    assert first.run("bytearray(8 << 30)").status is ExecStatus.MEMORY


@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/usr/bin/python3").exists() or not shutil.which("setpriv"),
    reason="needs root (to become another user) and a system python3",
)
def test_works_for_an_unprivileged_caller() -> None:
    """Run the sandbox module as an ordinary user with the system Python (one bwrap, no root).

    The sandbox imports only the standard library, so its four modules are loaded from a
    world-readable copy, in a package skeleton of their own.
    """
    folder = Path(tempfile.mkdtemp(prefix="tir-probe-"))
    package = folder / "arlarena_envs" / "tir_math"
    package.mkdir(parents=True)
    for directory in (folder, folder / "arlarena_envs", package):
        directory.chmod(0o755)
        (directory / "__init__.py").touch()
    for name in ("sandbox.py", "_prelude.py", "_cgroup.py", "_warm.py"):
        shutil.copy(PROJECT / "arlarena_envs/tir_math" / name, package / name)
    for path in folder.rglob("*.py"):
        path.chmod(0o644)
    script = f"""
import json, sys
sys.path.insert(0, {str(folder)!r})
from arlarena_envs.tir_math import sandbox as module
box = module.Sandbox(module.SandboxLimits(wall_time_s=3, cpu_time_s=2))
runs = {{
    "answer": box.run("final_answer(6 * 7)").answer,
    "ls": box.run("import os; print(sorted(os.listdir('/')))").stdout,
    "write": box.run("open('/usr/x', 'w')").status.value,
    "forks": box.run({FORK_LOOP!r}).stdout,
}}
print(json.dumps({{"root": box.is_root, **runs}}))
"""
    try:
        proc = subprocess.run(
            ["setpriv", "--reuid=4242", "--regid=4242", "--clear-groups", "/usr/bin/python3",
             "-c", script], capture_output=True, text=True, timeout=60, cwd="/",
        )
    finally:
        shutil.rmtree(folder)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["root"] is False and report["answer"] == "42"
    assert "work" not in report["ls"] and "root" not in report["ls"]
    assert report["write"] == "error" and int(report["forks"]) < 16

