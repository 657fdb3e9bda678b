"""The TIR Math sandbox: normal runs, result types, and a battery of hostile programs.

Every hostile case asserts the result type the sandbox reports and that the host is untouched;
the ``sandbox`` fixture then checks that the next execution still works. The fixture runs each
case twice: forked by a warm server, and in a bwrap of its own (cold). The warm cases also
check that a run leaves nothing (files, processes, IPC objects, random state) for the next.
"""

from __future__ import annotations

import ast
import dataclasses
import errno
import itertools
import json
import logging
import os
import re
import secrets
import shutil
import signal
import site
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import tracemalloc
import uuid
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

import pytest

from arlarena_envs.tir_math._packages import SANDBOX_PACKAGES, allowed_entries
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
import os
children = 0
for _ in range(64):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.execv('/usr/bin/sleep', ['sleep', 'SECONDS'])
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
    os.execv('/usr/bin/sleep', ['sleep', 'SECONDS'])
"""
LOOK = """
import os
ipc = [open(f'/proc/sysvipc/{kind}').read().splitlines()[1:] for kind in ('shm', 'msg', 'sem')]
print(sorted(os.listdir('/tmp')), ipc)
"""


def test_a_run_leaves_nothing_for_the_next(sandbox: Sandbox) -> None:
    """Files (a world-readable one, a locked directory, a tree 1,500 deep), a daemon and System
    V IPC objects of one run are gone when it has ended: cold, with its bwrap's namespaces;
    warm, with the namespaces the run had of its own, which the server never has to clean (it
    keeps serving)."""
    from arlarena_envs.tir_math import _warm

    def servers() -> set[int]:
        return {zygote.process.pid for zygote in list(_warm._ALL) if zygote.alive()}

    assert sandbox.run("pass").ok
    before = servers()
    seconds = f"30.{time.time_ns() % 10**9}"
    first = sandbox.run(LEFTOVERS.replace("SECONDS", seconds))
    assert first.ok and first.stdout == "shm True msg True\n", (first.stdout, first.stderr)
    assert _host_processes_with(f"sleep {seconds}") == []
    look = sandbox.run(LOOK)
    assert look.ok and look.stdout == "[] [[], [], []]\n", (look.stdout, look.stderr)
    deep = "import os\nfor _ in range(1500):\n    os.mkdir('d')\n    os.chdir('d')"
    assert sandbox.run(deep).ok and sandbox.run(LOOK).stdout == "[] [[], [], []]\n"
    assert servers() == before


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
    result = box.run("import time\nprint('started', flush=True)\ntime.sleep(2.5)")
    killer.join()  # killed, not timed out: the run ended with its server, before its deadline
    assert result.status is ExecStatus.KILLED and result.stdout == "started\n", result
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


def test_sleep_hits_the_wall_time_limit(sandbox: Sandbox) -> None:
    start = time.monotonic()
    result = sandbox.run("import time\nprint('sleeping', flush=True)\ntime.sleep(60)")
    assert result.status is ExecStatus.TIMEOUT and "wall-time" in result.message
    assert result.stdout == "sleeping\n"
    assert time.monotonic() - start >= LIMITS.wall_time_s - 0.1  # it had its time


def test_the_wall_time_is_the_programs_not_the_wait_for_a_server(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that waits for a warm server to start (here held back 1 s) still has its whole
    wall time once the interpreter is ready for its code; the limit itself still holds."""
    box = Sandbox(dataclasses.replace(LIMITS, wall_time_s=0.5, tmp_bytes=5 << 20))  # own pool
    if not box.warm:
        pytest.skip("warm servers need root")
    spawn = box._pool._spawn

    def slow_spawn():
        time.sleep(1.0)
        return spawn()

    monkeypatch.setattr(box._pool, "_spawn", slow_spawn)
    start = time.monotonic()
    result = box.run("final_answer(7)")
    assert time.monotonic() - start > 1.0 and result.ok and result.answer == "7", result
    result = box.run("import time\nprint('sleeping', flush=True)\ntime.sleep(30)")
    assert result.status is ExecStatus.TIMEOUT and result.wall_time_s < 5, result


def test_allocating_8_gib_is_a_memory_error(sandbox: Sandbox) -> None:
    result = sandbox.run("block = bytearray(8 << 30)\nprint(len(block))")
    assert result.status is ExecStatus.MEMORY and "MemoryError" in result.stderr


def test_bounded_fork_loop_is_capped(sandbox: Sandbox) -> None:
    seconds = f"30.{time.time_ns() % 10**9}"
    result = sandbox.run(FORK_LOOP.replace("SECONDS", seconds))
    assert result.ok, result.stderr
    assert int(result.stdout) < LIMITS.max_processes
    assert _host_processes_with(f"sleep {seconds}") == [], "the children die with the run"


def test_printing_100_mb_is_cut(sandbox: Sandbox) -> None:
    # 1,000 writes of 100 kB: no 100 MB string to build, whose page faults can outlast the
    # 2 s CPU limit on a loaded host before a byte is printed
    result = sandbox.run("import sys\nfor _ in range(1000):\n    sys.stdout.write('x' * 100_000)")
    assert result.status is ExecStatus.OUTPUT_LIMIT and result.truncated
    assert len(result.stdout) <= LIMITS.max_output_bytes
    assert "output truncated" in result.output() and "was stopped" in result.message


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
    result = sandbox.run(code)
    assert result.ok and result.stdout == "parent exits\n", result.stderr
    assert _host_processes_with(f"sleep {token}") == []  # gone once the run has ended


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
        result = sandbox.run(code)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.status is ExecStatus.OUTPUT_LIMIT and "answer channel" in result.message
    assert peak < 4 << 20


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
    """No capability in any set: warm runs keep none even in their inheritable and bounding
    sets; cold ones keep the two bwrap gave the interpreter in the inheritable set, inert
    (no capability can be gained from it: ``NoNewPrivs``, nosuid mounts)."""
    code = """
import subprocess, threading
status = dict(line.split(':\\t', 1) for line in open('/proc/self/status').read().splitlines())
print(status['CapEff'], status['CapPrm'], status['CapAmb'], status['NoNewPrivs'])
print(status['CapInh'], status['CapBnd'])
print(subprocess.run(['unshare', '--user', 'true']).returncode != 0)
thread = threading.Thread(target=print, args=('thread',))
thread.start()
thread.join()
"""
    result = sandbox.run(code)
    assert result.ok, result.stderr
    lines = result.stdout.splitlines()
    none = "0" * 16
    assert [lines[0], *lines[2:]] == [f"{none} {none} {none} 1", "True", "thread"], lines
    inheritable, bounding = lines[1].split()
    if sandbox.warm:
        assert inheritable == bounding == none
    else:
        setuid_setgid = 1 << 6 | 1 << 7
        assert int(inheritable, 16) & ~setuid_setgid == 0, inheritable


# -- what a run could leave for the host or the next run ---------------------------------------
KEYS = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
add_key, request_key, keyctl = {'x86_64': (248, 249, 250), 'aarch64': (217, 218, 219)}[
    os.uname().machine]
key = libc.syscall(add_key, b'user', b'TOKEN', b'payload', 7, -4)  # the user keyring
print('add_key', key if key < 0 else 'added', ctypes.get_errno() if key < 0 else 0)
if key >= 0:
    libc.syscall(keyctl, 5, key, 0x3f3f3f3f)  # KEYCTL_SETPERM: anyone may view and read it
found = libc.syscall(request_key, b'user', b'TOKEN', None, 0)
print('request_key', found, ctypes.get_errno())
print('keyctl', libc.syscall(keyctl, 0, -3, 0), ctypes.get_errno())  # the session keyring's id
print('proc', repr(open('/proc/keys').read()))
"""


def test_keyrings_are_out_of_reach(sandbox: Sandbox) -> None:
    """A run can neither add a key (which would outlive it in the host kernel, under a fresh
    quota per uid), nor look one up, nor reach the session keyring it inherited; and
    ``/proc/keys`` lists nothing, so a key planted by one run never shows in the next."""
    code = KEYS.replace("TOKEN", f"tir-key-{uuid.uuid4().hex}")
    first, second = sandbox.run(code), sandbox.run(code)
    for result in (first, second):
        assert result.ok, result.stderr
        assert result.stdout.splitlines() == [
            "add_key -1 1", "request_key -1 1", "keyctl -1 1", "proc ''"], result.stdout


SOCKETS = """
import socket
kind, budget = KIND, BUDGET
def queued():  # the payload bytes in every socket queue of the run's namespace
    total = 0
    for name in ('tcp', 'udp'):
        for line in open(f'/proc/net/{name}').read().splitlines()[1:]:
            tx, rx = line.split()[4].split(':')
            total += int(tx, 16) + int(rx, 16)
    return total
chunk = b'x' * 60000
held = []
while queued() < 3 * budget and len(held) < 100:
    if kind == 'tcp':
        listener = socket.create_server(('127.0.0.1', 0))
        sender = socket.create_connection(listener.getsockname())
        receiver = listener.accept()[0]
        listener.close()
    else:
        receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        receiver.bind(('127.0.0.1', 0))
        sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sender.connect(receiver.getsockname())
    for each in (sender, receiver):
        each.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)
        each.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 30)
    held += [sender, receiver]
    sender.setblocking(False)
    for _ in range(1000):  # unread: the kernel holds what is sent, or drops (UDP) or refuses it
        try:
            sender.send(chunk)
        except OSError:
            break
print(queued())
"""


@pytest.mark.parametrize("kind", ["tcp", "udp"])
@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_socket_buffers_count_against_the_memory_budget(kind: str, warm: bool) -> None:
    """Loopback TCP and UDP buffers left unread are charged to the run's memory budget (a
    cgroup's socket memory), not only to the host-wide limit: of the 192 MiB a run tries to
    queue within a 64 MiB budget, the budget is what it gets."""
    budget = 64 << 20
    box = Sandbox(dataclasses.replace(LIMITS, memory_bytes=budget, wall_time_s=20.0), warm=warm)
    if not box.memory_bound.startswith("cgroup"):
        pytest.skip("no writable cgroup: socket buffers are bounded by the host only")
    result = box.run(SOCKETS.replace("KIND", repr(kind)).replace("BUDGET", str(budget)))
    assert result.ok, (result.stderr, result.message)
    assert int(result.stdout) <= budget, int(result.stdout) >> 20


MQ_SEND = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
queue = libc.mq_open(b'/NAME', os.O_CREAT | os.O_RDWR, 0o666, None)
print('sent', queue >= 0 and libc.mq_send(queue, b'secret', 6, 0) == 0)
"""
MQ_RECEIVE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
queue = libc.mq_open(b'/NAME', os.O_RDONLY | os.O_NONBLOCK, 0, None)
buffer = ctypes.create_string_buffer(1 << 16)
print('found', queue >= 0 and buffer.raw[:libc.mq_receive(queue, buffer, 1 << 16, None)])
"""


def test_posix_message_queues_do_not_cross_runs(sandbox: Sandbox) -> None:
    name = f"tir-{uuid.uuid4().hex}"
    sent = sandbox.run(MQ_SEND.replace("NAME", name))
    assert sent.ok and sent.stdout == "sent True\n", (sent.stdout, sent.stderr)
    received = sandbox.run(MQ_RECEIVE.replace("NAME", name))
    assert received.ok and received.stdout == "found False\n", (received.stdout, received.stderr)


MEMORY_SCAN = """
import ctypes
chunks = []
for line in open('/proc/self/maps').read().splitlines():
    addresses, permissions = line.split()[:2]
    if permissions.startswith('rw'):
        start, end = (int(address, 16) for address in addresses.split('-'))
        chunks.append(ctypes.string_at(start, end - start))
token = REVERSED[::-1].encode()  # made after the snapshot: this code holds it backwards only
print(sum(chunk.count(token) for chunk in chunks))
"""


def test_a_run_finds_nothing_of_the_last_one_in_its_memory(sandbox: Sandbox) -> None:
    """A run's file names never pass through a warm server's memory, which every later run is
    forked from and can read back."""
    token = uuid.uuid4().hex
    names = f"for i in range(50):\n    open(f'/tmp/{token}{'-' * 160}{{i:03}}', 'w').close()"
    assert sandbox.run(names).ok  # long names: freed, they would stay in the server's memory
    result = sandbox.run(MEMORY_SCAN.replace("REVERSED", repr(token[::-1])))
    assert result.ok and result.stdout == "0\n", (result.stdout, result.stderr)


NAMESPACES = """
import os, socket
child = os.fork()
if child == 0:
    os._exit(0)
os.waitpid(child, 0)
print(os.getpid(), child, sorted(open('/proc/net/tcp').read().splitlines()[1:]))
listener = socket.socket()
listener.bind(('127.0.0.1', PORT))  # no SO_REUSEADDR: a TIME_WAIT on the port refuses it
listener.listen()
client = socket.create_connection(('127.0.0.1', PORT))
accepted = listener.accept()[0]
accepted.close()  # closed first: it waits in TIME_WAIT, bound to the port
client.close()
listener.close()
"""


def test_a_run_cannot_choose_the_next_ones_pids_or_ports(sandbox: Sandbox) -> None:
    """A run's pids and sockets tell the next run nothing and decide nothing for it: its pids
    do not follow the last run's (cold: each bwrap's namespace starts at 1; warm: the server
    draws them at random, so one in some 30,000 follows by chance: not twice in a row), it sees
    no socket of the last run, and the port that one used is free (no TIME_WAIT left to refuse
    its ``bind``: a network namespace of its own)."""
    code = NAMESPACES.replace("PORT", str(40_000 + secrets.randbelow(20_000)))
    runs = [sandbox.run(code) for _ in range(3)]
    assert all(run.ok for run in runs), [run.stderr for run in runs]
    fields = [run.stdout.split(" ", 2) for run in runs]
    assert all(sockets == "[]\n" for *_, sockets in fields), [run.stdout for run in runs]
    follows = sum(int(later[0]) == int(earlier[1]) + 1
                  for earlier, later in itertools.pairwise(fields))
    assert follows < 2, [run.stdout for run in runs]


SPIN = """
import os, time
read, write = os.pipe()
start = time.monotonic()
children = 0
for _ in range(15):
    if os.fork() == 0:
        os.setsid()
        break
    children += 1
while time.monotonic() < start + 2.0:
    pass
if children < 15:  # a child: its CPU time to the parent
    os.write(write, b'%f ' % time.process_time())
    os._exit(0)
os.close(write)
times = b''
while len(times.split()) < 15 and (chunk := os.read(read, 4096)):
    times += chunk
print(round((time.process_time() + sum(map(float, times.split()))) / (time.monotonic() - start), 2))
"""


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_a_busy_run_does_not_starve_a_concurrent_one(warm: bool) -> None:
    """16 busy processes, each in a session of its own, get their run's CPU quota (here half a
    core) and no more, however many the machine has; a concurrent run's work meanwhile ends as
    it should."""
    spinner = Sandbox(dataclasses.replace(LIMITS, wall_time_s=20.0, cpu_cores=0.5), warm=warm)
    if not spinner.cpu_bound.startswith("cgroup"):
        pytest.skip("no writable cgroup cpu controller")
    worker = Sandbox(dataclasses.replace(LIMITS, wall_time_s=20.0), warm=warm)
    with ThreadPoolExecutor(1) as pool:
        spinning = pool.submit(spinner.run, SPIN)
        time.sleep(0.5)  # its processes are up
        work = worker.run("import time\nwhile time.process_time() < 0.3:\n    pass\nprint('done')")
        spun = spinning.result()
    assert spun.ok, (spun.stderr, spun.message)
    assert float(spun.stdout) <= 0.5 * 1.3, spun.stdout  # CPU seconds per second, all 16
    assert work.ok and work.stdout == "done\n", (work.stderr, work.message)


TEXTS = r"""
import sys
sys.stdout.buffer.write(b'nul\x00 soh\x01 esc\x1b[31m del\x7f bytes\xff\xfe cr\r\n')
sys.stdout.flush()
print('surrogate \ud800', file=sys.stderr)
final_answer('answer \ud800 \x00\x1b')
"""


def test_every_string_of_a_result_encodes_and_lies_in_the_env_space(sandbox: Sandbox) -> None:
    """Whatever a program prints or answers, what the sandbox hands out encodes as UTF-8 and
    lies in the TIR env's declared observation space (the one text rule: controls escaped,
    lone surrogates U+FFFD)."""
    from arlarena_envs.tir_math.env import TIRMathEnv

    space = TIRMathEnv.observation_space
    answered = sandbox.run(TEXTS)
    failed = sandbox.run("raise ValueError('\\x00 \\ud800 \\x1b')")
    for result in (answered, failed):
        for text in (result.stdout, result.stderr, result.answer or "", result.message,
                     result.output()):
            text.encode("utf-8")
            assert space.contains(text), repr(text)
    assert answered.stdout == "nul\\x00 soh\\x01 esc\\x1b[31m del\\x7f bytes\ufffd\ufffd cr\n"
    assert answered.answer == "answer \ufffd \\x00\\x1b"
    assert "ValueError: \\x00 \\ud800 \\x1b" in failed.stderr


def test_a_run_sees_no_host_pid_in_its_cgroup(sandbox: Sandbox) -> None:
    result = sandbox.run("print(open('/proc/self/cgroup').read())")
    assert result.ok and re.search(rf"\b{os.getpid()}\b", result.stdout) is None, result.stdout


UNIX_HOLD = """
import socket
held = []
for _ in range(64):
    sender, receiver = socket.socketpair()
    sender.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)
    sender.setblocking(False)
    held += [sender, receiver]
    try:
        while True:
            sender.send(b'x' * 65536)
    except BlockingIOError:
        pass
"""


def test_a_server_killed_for_memory_under_a_run_reports_memory() -> None:
    """Socket buffers are kernel memory: charged to the run's budget, not to any process's
    size, so the kernel may pick a server's process instead of the run's when the budget runs
    out (the test makes it the server's init). The run then reports ``memory``, not a kill."""
    box = Sandbox(dataclasses.replace(LIMITS, memory_bytes=128 << 20, wall_time_s=20.0))
    if not box.warm or not box.memory_bound.startswith("cgroup"):
        pytest.skip("warm servers in a cgroup need root and a writable cgroup")
    assert box.run("pass").ok
    zygote = box._pool._idle[-1]
    bwrap = zygote.process.pid
    init = Path(f"/proc/{bwrap}/task/{bwrap}/children").read_text().split()[0]
    Path(f"/proc/{init}/oom_score_adj").write_text("1000")
    result = box.run(UNIX_HOLD)
    assert result.status is ExecStatus.MEMORY, (result.status, result.message)
    assert not zygote.alive() and box.run("print(3)").stdout == "3\n"


def test_a_server_that_dies_with_the_request_is_replaced_and_the_run_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server that takes a run's request and dies before the run's interpreter is ready has
    run nothing: the run goes to a fresh server. (The test holds the run's process, which the
    server made ahead, stopped, then kills the server.)"""
    from arlarena_envs.tir_math import _warm

    box = Sandbox(LIMITS)
    if not box.warm:
        pytest.skip("warm servers need root")
    assert box.run("pass").ok
    broken: list[_warm.Zygote] = []
    request = _warm.Zygote.request

    def break_the_first(zygote: _warm.Zygote, message: dict, fds: list[int]) -> None:
        if not broken:
            broken.append(zygote)
            pid = zygote.process.pid  # bwrap, its init, the server, its init, the run's process
            for _ in range(4):
                children = Path(f"/proc/{pid}/task/{pid}/children")
                deadline = time.monotonic() + 10  # the run's process: made after the last run
                while not children.read_text() and time.monotonic() < deadline:
                    time.sleep(0.01)
                pid = int(children.read_text().split()[0])
            os.kill(pid, signal.SIGSTOP)
        request(zygote, message, fds)
        if len(broken) == 1 and broken[0] is zygote:
            os.killpg(zygote.process.pid, signal.SIGKILL)

    monkeypatch.setattr(_warm.Zygote, "request", break_the_first)
    result = box.run("print(6 * 7)")
    assert result.ok and result.stdout == "42\n", result
    assert len(broken) == 1 and not broken[0].alive()


# -- the limits one by one (each test fails with its limit alone removed) -----------------------
def test_the_default_limits_are_pinned() -> None:
    assert dataclasses.asdict(SandboxLimits()) == {
        "wall_time_s": 10.0, "cpu_time_s": 10, "memory_bytes": 1 << 30, "max_processes": 16,
        "max_output_bytes": 64 << 10, "max_file_bytes": 16 << 20, "tmp_bytes": 64 << 20,
        "max_open_files": 128, "max_code_bytes": 1 << 20, "max_answer_chars": 10_000,
        "min_process_bytes": 256 << 20, "cpu_cores": 1.0,
    }


def test_a_busy_loop_hits_the_cpu_time_limit(sandbox: Sandbox) -> None:
    """``RLIMIT_CPU``: the loop ends at 1 s of CPU time, long before the wall-time limit."""
    box = Sandbox(dataclasses.replace(LIMITS, cpu_time_s=1, wall_time_s=30.0), warm=sandbox.warm)
    result = box.run("while True:\n    pass")
    assert result.status is ExecStatus.TIMEOUT and "CPU-time limit of 1 s" in result.message


def test_a_file_stops_at_the_file_size_limit(sandbox: Sandbox) -> None:
    """``RLIMIT_FSIZE``: a write stops at 1 MiB, the next fails (``EFBIG``), in a roomy ``/tmp``."""
    box = Sandbox(dataclasses.replace(LIMITS, max_file_bytes=1 << 20), warm=sandbox.warm)
    code = ("import os\nfd = os.open('/tmp/big', os.O_WRONLY | os.O_CREAT)\n"
            "print(os.write(fd, bytes(2 << 20)))\ntry:\n    os.write(fd, b'0')\n"
            "except OSError as error:\n    print(error.errno)")
    result = box.run(code)
    assert result.ok and result.stdout == f"{1 << 20}\n{errno.EFBIG}\n", result


def test_open_files_stop_at_the_limit(sandbox: Sandbox) -> None:
    """``RLIMIT_NOFILE``: descriptors 0 to 31 and no more (``EMFILE``)."""
    box = Sandbox(dataclasses.replace(LIMITS, max_open_files=32), warm=sandbox.warm)
    code = ("import os\nfds = []\ntry:\n    for _ in range(1000):\n"
            "        fds.append(os.open('/dev/null', os.O_RDONLY))\n"
            "except OSError as error:\n    print(error.errno, max(fds) + 1)")
    result = box.run(code)
    assert result.ok and result.stdout == f"{errno.EMFILE} 32\n", result


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


def test_run_uids_are_no_host_users_or_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """A uid the host's name services know (directory services allocate in the same range) or
    one excluded (a warm server's own) is drawn again."""
    import grp
    import pwd

    from arlarena_envs.tir_math import _uids

    low = _uids.UID_RANGE[0]
    user, group, server = low + 1, low + 2, low + 3
    draws = iter([1, 2, 3, 4])  # what secrets.randbelow gives, one draw after the other
    monkeypatch.setattr(_uids.secrets, "randbelow", lambda _: next(draws))
    known_user, known_group = pwd.getpwuid(0), grp.getgrgid(0)  # stand-ins for a directory's

    def getpwuid(uid: int) -> pwd.struct_passwd:
        if uid == user:
            return known_user
        raise KeyError(uid)

    def getgrgid(gid: int) -> grp.struct_group:
        if gid == group:
            return known_group
        raise KeyError(gid)

    monkeypatch.setattr(_uids.pwd, "getpwuid", getpwuid)
    monkeypatch.setattr(_uids.grp, "getgrgid", getgrgid)
    assert _uids.draw_uid(exclude={server}) == low + 4


def test_stale_cgroups_are_swept_and_live_ones_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cgroups have random names (a run sees its own: nothing of the host in them); the empty
    ones a dead process left are removed when the next process looks, those in use are not."""
    from arlarena_envs.tir_math import _cgroup

    found = _cgroup.find_cgroups()
    if found is None:
        pytest.skip("no writable cgroup")
    scratch = f"tir-test-{uuid.uuid4().hex}"  # parents of this test's own: no one else's swept
    own = _cgroup.Cgroups(found.version, found.memory_parent / scratch,
                          found.pids_parent / scratch,
                          found.cpu_parent / scratch if found.cpu_parent else None)
    for parent in own.parents:
        parent.mkdir()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        limits = _cgroup.CgroupLimits(64 << 20, 64 << 20, 4, 1.0)
        stale, live = own.create(limits), own.create(limits)
        assert stale.memory.name != live.memory.name and str(os.getpid()) not in stale.memory.name
        live.add(sleeper.pid)
        own.sweep()  # both younger than a run's set-up: kept
        assert all(d.exists() for d in stale.directories + live.directories)
        monkeypatch.setattr(_cgroup, "_STALE_S", -1.0)
        own.sweep()
        assert not any(d.exists() for d in stale.directories)
        assert all(d.exists() for d in live.directories)
    finally:
        sleeper.kill()
        sleeper.wait()
        for parent in own.parents:
            for child in [c for c in parent.iterdir() if c.is_dir()]:
                child.rmdir()
            parent.rmdir()


@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/usr/bin/python3").exists() or not shutil.which("setpriv"),
    reason="needs root (to become another user) and a system python3",
)
def test_works_for_an_unprivileged_caller() -> None:
    """Run the sandbox module as an ordinary user with the system Python (one bwrap, no root).

    The sandbox imports only the standard library, so its modules are loaded from a
    world-readable copy, in a package skeleton of their own.
    """
    folder = Path(tempfile.mkdtemp(prefix="tir-probe-"))
    package = folder / "arlarena_envs" / "tir_math"
    package.mkdir(parents=True)
    for directory in (folder, folder / "arlarena_envs", package):
        directory.chmod(0o755)
        (directory / "__init__.py").touch()
    for name in ("tir_math/sandbox.py", "tir_math/_prelude.py", "tir_math/_cgroup.py",
                 "tir_math/_warm.py", "tir_math/_uids.py", "tir_math/_packages.py",
                 "text_rule.py"):
        shutil.copy(PROJECT / "arlarena_envs" / name, folder / "arlarena_envs" / name)
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
    "forks": box.run({FORK_LOOP.replace("SECONDS", "30")!r}).stdout,
    "keys": box.run({KEYS.replace("TOKEN", "tir-unprivileged")!r}).stdout.splitlines()[:3],
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
    assert report["keys"] == ["add_key -1 1", "request_key -1 1", "keyctl -1 1"]



# -- the second battery: the answer key, the kernel's surface, host-wide pools and channels -----
def _panel_needles() -> list[str]:
    """What betrays a TIR panel's answer key: a phrase of each question (a 40-character run of
    plain text, so that any encoding of the file shows it) and each answer long enough to be
    telling (16 characters and more, not digits alone: a run of 16 digits of 1/0.85 is in the
    decimal module's test data), over every task of every ``math-*`` panel."""
    from arlarena_envs.panels import panel_specs
    from arlarena_envs.tir_math.data import load_taskset

    needles = set()
    for name, spec in panel_specs().items():
        if name.startswith("math-"):
            tasks = load_taskset(spec.options["split"])
            for seed in spec.seeds:
                task = tasks[seed]
                if runs := re.findall(r"[A-Za-z0-9 ,.?()]{30,}", task.question):
                    needles.add(max(runs, key=len)[:40].strip())
                if len(task.answer) >= 16 and not task.answer.isdigit():
                    needles.add(task.answer)
    return sorted(needles)


ANSWER_SEARCH = """
import subprocess
needles = NEEDLES
found = subprocess.run(
    ['grep', '-rlIF', '--no-messages', '-f', '-', '/', '--exclude-dir=proc',
     '--exclude-dir=sys', '--exclude-dir=dev'],
    input='\\n'.join(needles), capture_output=True, text=True).stdout.split()
print(len(needles), found[:20])
"""


@pytest.mark.slow
@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_no_panel_answer_is_anywhere_a_run_can_read(warm: bool) -> None:
    """Code in the sandbox searches every file it can read (the whole tree but ``/proc``,
    ``/sys``, ``/dev``) for the questions and telling answers of every TIR panel, the evaluation
    sets' files and the training generators' templates included, and finds none. (Text files:
    ``grep -I`` skips binary ones, whose names the next test checks; some 40 s a path.)"""
    needles = _panel_needles()
    assert len(needles) > 500
    box = Sandbox(SandboxLimits(wall_time_s=600, cpu_time_s=600), warm=warm)
    result = box.run(ANSWER_SEARCH.replace("NEEDLES", repr(needles)))
    assert result.ok, result.stderr
    assert result.stdout == f"{len(needles)} []\n", result.stdout


DATA_FILES = {".json", ".jsonl", ".parquet", ".csv", ".tsv", ".gz", ".arrow", ".npz", ".npy",
              ".pkl", ".pt", ".bin", ".safetensors", ".txt", ".zip", ".xz", ".bz2"}


def test_no_installed_dataset_or_other_package_is_reachable(sandbox: Sandbox) -> None:
    """Of site-packages a run sees exactly the allowlist's distributions (:data:`SANDBOX_PACKAGES`
    and what they require); no installed data file of any other distribution exists inside,
    where the host has it or where the allowed packages are mounted, and neither the evaluation
    sets, the generators, torch nor this project import. The interpreter's own site-packages
    and the system's package trees read empty."""
    site_dir = Path(site.getsitepackages()[0]).resolve()
    allowed = allowed_entries([site_dir])[site_dir]
    assert {"numpy", "sympy", "mpmath"} <= set(allowed) and "champ_dataset" not in allowed
    paths = []
    for distribution in metadata.distributions(path=[str(site_dir)]):
        for file in distribution.files or ():
            if file.parts and file.parts[0] not in allowed and file.suffix in DATA_FILES:
                paths.append(str(file))
    assert any(p.startswith("champ_dataset/") for p in paths), "the CHAMP set is not installed"
    base_site = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix})
    code = f"""
import importlib, os
paths, site_dir = {paths!r}, {str(site_dir)!r}
inside = ['/opt/arlarena/site/' + d for d in os.listdir('/opt/arlarena/site')]
print(sorted(set().union(*(os.listdir(d) for d in inside))))
print([p for p in paths for d in (site_dir, *inside) if os.path.lexists(os.path.join(d, p))][:5])
for name in ('champ_dataset', 'reasoning_gym', 'torch', 'datasets', 'arlarena_envs'):
    try:
        importlib.import_module(name)
        print('imported', name)
    except ImportError:
        pass
trees = ['/opt/arlarena/python/' + {os.path.relpath(base_site["purelib"], sys.base_prefix)!r},
         '/usr/lib/python3/dist-packages']
print([t for t in trees if os.path.isdir(t) and os.listdir(t)])
"""
    result = sandbox.run(code)
    assert result.ok, result.stderr
    listed, found, *rest = result.stdout.splitlines()
    assert listed == repr(sorted(allowed)) and found == "[]" and rest == ["[]"], result.stdout
    assert set(SANDBOX_PACKAGES) - {"scipy"} <= {e.split("-")[0] for e in allowed}


SYSCALLS = """
import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
NUMBERS = {'x86_64': dict(io_setup=206, io_uring_setup=425, perf_event_open=298, bpf=321,
                          inotify_init1=294, fanotify_init=300, cachestat=451),
           'aarch64': dict(io_setup=0, io_uring_setup=425, perf_event_open=241, bpf=280,
                           inotify_init1=26, fanotify_init=262, cachestat=451)}[os.uname().machine]
def call(name, *args):
    result = libc.syscall(NUMBERS[name], *args)
    return errno.errorcode.get(ctypes.get_errno(), 'ok') if result < 0 else 'ok'
def sock(family, kind, protocol=0):
    try:
        socket.socket(family, kind, protocol).close()
        return 'ok'
    except OSError as error:
        return errno.errorcode[error.errno]
def option(name):
    try:
        socket.socket().getsockopt(socket.SOL_SOCKET, name, 8)
        return 'ok'
    except OSError as error:
        return errno.errorcode[error.errno]
buffer = ctypes.create_string_buffer(256)
context = ctypes.c_ulong(0)
fd = os.open('/usr/bin/env', os.O_RDONLY)
try:
    os.preadv(fd, [bytearray(16)], 0, os.RWF_NOWAIT)
    nowait = 'ok'
except OSError as error:
    nowait = errno.errorcode[error.errno]
try:
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    fadvise = 'ok'
except OSError as error:
    fadvise = errno.errorcode[error.errno]
print({
    'vsock': sock(40, socket.SOCK_STREAM),
    'vsock_dgram': sock(40, socket.SOCK_DGRAM),
    'uevent': sock(16, socket.SOCK_DGRAM, 15),
    'sock_diag': sock(16, socket.SOCK_DGRAM, 4),
    'netlink_route': sock(16, socket.SOCK_DGRAM, 0),
    'io_setup': call('io_setup', 65536, ctypes.byref(context)),
    'io_uring_setup': call('io_uring_setup', 8, buffer),
    'perf_event_open': call('perf_event_open', buffer, 0, -1, -1, 0),
    'bpf': call('bpf', 0, buffer, 72),
    'inotify': call('inotify_init1', 0),
    'fanotify': call('fanotify_init', 0, 0),
    'cachestat': call('cachestat', fd, buffer, buffer, 0),
    'so_cookie': option(57),
    'so_netns_cookie': option(71),
    'preadv2_nowait': nowait,
    'preadv': 'ok' if os.preadv(fd, [bytearray(16)], 0) == 16 else 'short',
    'fadvise': fadvise,
    'cmdline': open('/proc/cmdline').read(),
})
"""


def _syscalls(sandbox: Sandbox) -> dict[str, str]:
    result = sandbox.run(SYSCALLS)
    assert result.ok, result.stderr
    return ast.literal_eval(result.stdout)


def test_vsock_is_refused_also_through_io_uring(sandbox: Sandbox) -> None:
    """``AF_VSOCK`` lies outside every namespace (the hypervisor's ports): no socket of it,
    and no io_uring to make one with (io_uring's socket op would bypass the filter)."""
    calls = _syscalls(sandbox)
    assert calls["vsock"] == calls["vsock_dgram"] == "EPERM", calls
    assert calls["io_uring_setup"] == "EPERM", calls


def test_a_run_cannot_take_the_hosts_aio_pool(sandbox: Sandbox) -> None:
    """``io_setup`` is refused: a run holds no slot of the host-wide ``fs.aio-max-nr``, so the
    host's own AIO users keep theirs."""
    calls = _syscalls(sandbox)
    assert calls["io_setup"] == "EPERM", calls


def test_io_uring_and_perf_events_are_refused(sandbox: Sandbox) -> None:
    calls = _syscalls(sandbox)
    assert calls["io_uring_setup"] == calls["perf_event_open"] == calls["bpf"] == "EPERM", calls


def test_the_channels_between_runs_are_closed(sandbox: Sandbox) -> None:
    """The host-wide socket-cookie counter cannot be read (``SO_COOKIE``, ``SO_NETNS_COOKIE``,
    sock_diag, bpf), nor the page cache probed (``RWF_NOWAIT``, ``cachestat``) or flushed
    (``fadvise``); plain reads still work. Timing a plain read stays possible (see the docs)."""
    calls = _syscalls(sandbox)
    assert calls["so_cookie"] == calls["so_netns_cookie"] == calls["sock_diag"] == "EPERM", calls
    assert calls["preadv2_nowait"] in ("ENOTSUP", "EOPNOTSUPP") and calls["preadv"] == "ok", calls
    assert calls["cachestat"] == calls["fadvise"] == "EPERM", calls


def test_host_events_and_the_kernel_command_line_are_out_of_reach(sandbox: Sandbox) -> None:
    """No inotify or fanotify watch (which would see the host's reads of the mounted packages),
    no ``NETLINK_KOBJECT_UEVENT`` socket (the host's device events), an empty ``/proc/cmdline``;
    ordinary netlink (routes, used by name lookups) still opens."""
    calls = _syscalls(sandbox)
    assert calls["inotify"] == calls["fanotify"] == calls["uevent"] == "EPERM", calls
    assert calls["cmdline"] == "" and calls["netlink_route"] == "ok", calls


OWN_PROC = """
import os
pid = os.getpid()
status = dict(line.split(':', 1) for line in open(f'/proc/{pid}/status').read().splitlines())
start = int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[19])  # what psutil reads
boot = [line for line in open('/proc/stat').read().splitlines() if line.startswith('btime')]
listed = {p: open(f'/proc/{p}/cmdline', 'rb').read().split(b'\\0')[0].decode()
          for p in os.listdir('/proc') if p.isdigit()}
print(os.readlink('/proc/self') == str(pid), int(status['Pid']) == pid, start > 0, len(boot))
print(sorted(set(listed.values())))
"""


def test_a_run_reads_its_own_processes_in_proc(sandbox: Sandbox) -> None:
    """``/proc`` is the run's own pid namespace's: ``/proc/<os.getpid()>`` is the run (and
    ``/proc/stat`` is there: what ``psutil.Process()`` reads), and a warm run lists no bwrap, no
    server and no waiter, only itself (a cold one: itself and the bwrap it runs under)."""
    result = sandbox.run(OWN_PROC)
    assert result.ok, result.stderr
    checks, listed = result.stdout.splitlines()
    assert checks == "True True True 1", result.stdout
    programs = ast.literal_eval(listed)
    expected = 1 if sandbox.warm else 2
    assert len(programs) == expected and any("python" in p for p in programs), programs
