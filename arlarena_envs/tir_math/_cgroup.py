"""Per-run cgroups for the sandbox: one memory, process and CPU budget for a run as a whole.

Holds :func:`find_cgroups` (``-> Cgroups | None``), :class:`Cgroups` (``create(limits) ->
RunCgroup``), :class:`CgroupLimits` and :class:`RunCgroup` (``add(pid)``, ``set_limits``,
``usage()``, ``tasks()``, ``oom_kills()`` / ``oom_killed()``, ``remove()``). A cold run has a
cgroup of its own; a warm server has one for its life, which each of its runs enters by being
forked there (no migration on a run's path: moving a task between cgroups waits for an RCU
grace period, some 7 ms per hierarchy on an idle machine). A cgroup's name is random (it shows
in a run's ``/proc/self/cgroup``, so it holds nothing of the host); stale cgroups are removed
when the next process looks.

With cgroup v2, each run gets one directory under a parent that has the ``memory`` and ``pids``
controllers (and ``cpu`` where it can be had) enabled for its children:
``ARLARENA_SANDBOX_CGROUP`` if set (a delegated subtree), else this process's own cgroup where
it may enable them (the root of a container's cgroup namespace, say). With cgroup v1, each run
gets one directory in the memory, the pids and (where writable) the cpu hierarchy, under this
process's own cgroups there. A run's limits: ``memory.max`` / ``memory.limit_in_bytes`` (swap
off too), which charges every page of every process of the run, its ``/tmp`` included; its
socket buffers (TCP and UDP: v2 charges them to ``memory.max`` itself, v1 only to
``memory.kmem.tcp.limit_in_bytes``, which is set to the same budget, since v1 charges nothing
until it is); ``pids.max``; and a CPU quota (``cpu.max`` / ``cpu.cfs_quota_us``). Nothing here
runs unless the directories are writable; :func:`find_cgroups` returns ``None`` otherwise.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CGROUP_ENV_VAR", "CgroupLimits", "Cgroups", "RunCgroup", "find_cgroups"]

CGROUP_ENV_VAR = "ARLARENA_SANDBOX_CGROUP"
"""A cgroup v2 directory whose children may use ``memory`` and ``pids`` (a delegated subtree)."""

_PREFIX = "arlarena-sandbox-"
_STALE_S = 60.0
"""How old an empty cgroup of this module must be before any process may remove it (younger,
it may be one whose first process is being moved in)."""
_CPU_PERIOD_US = 100_000


def _write(path: Path, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """``(fstype, mount root, mount point, super options)`` of every cgroup mount."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in {"cgroup", "cgroup2"}:
            found.append((tail[0], fields[3], fields[4], set(tail[2].split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup per hierarchy: ``""`` for v2, each controller's name for v1."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    return paths


def _inside(mount_root: str, mount_point: str, path: str) -> Path | None:
    """Where cgroup ``path`` is on the mount, or ``None`` if the mount does not show it."""
    root, target = Path(mount_root), Path(path)
    if not target.is_relative_to(root):
        return None
    return Path(mount_point) / target.relative_to(root)


@dataclass(frozen=True)
class CgroupLimits:
    """What one cgroup may hold: ``memory_bytes`` of memory, ``socket_bytes`` of socket buffers
    (counted apart on v1 only), ``tasks`` processes and ``cpu_cores`` of CPU time per second."""

    memory_bytes: int
    socket_bytes: int
    tasks: int
    cpu_cores: float


@dataclass(frozen=True)
class RunCgroup:
    """The cgroup directories of one run (one for v2; memory, pids and cpu for v1; ``cpu`` is
    ``None`` where no CPU quota can be set)."""

    version: int
    memory: Path
    pids: Path
    cpu: Path | None = None

    @property
    def directories(self) -> list[Path]:
        return list(dict.fromkeys(d for d in (self.memory, self.pids, self.cpu) if d))

    def add(self, pid: int) -> None:
        """Move process ``pid`` (not its existing children) into the run's cgroups."""
        for directory in self.directories:
            _write(directory / "cgroup.procs", str(pid))

    def oom_kills(self) -> int:
        """How many processes the kernel killed here for going over the memory limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            text = (self.memory / name).read_text()
        except OSError:
            return 0
        counts = dict(line.split()[:2] for line in text.splitlines() if len(line.split()) >= 2)
        return int(counts.get("oom_kill", "0"))

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the run for going over its memory."""
        return self.oom_kills() > 0

    def usage(self) -> int:
        """The bytes charged here now."""
        name = "memory.current" if self.version == 2 else "memory.usage_in_bytes"
        return int((self.memory / name).read_text())

    def tasks(self) -> int:
        """The processes here now."""
        return int((self.pids / "pids.current").read_text())

    def set_limits(self, limits: CgroupLimits) -> None:
        """Hold at most ``limits`` (swap off)."""
        memory = str(limits.memory_bytes)
        if self.version == 2:
            _write(self.memory / "memory.max", memory)
            if (self.memory / "memory.swap.max").exists():
                _write(self.memory / "memory.swap.max", "0")
        else:  # v1 keeps memory.limit_in_bytes <= memory.memsw.limit_in_bytes at every write
            files = ["memory.limit_in_bytes"]
            if (self.memory / "memory.memsw.limit_in_bytes").exists():
                files.append("memory.memsw.limit_in_bytes")
            if limits.memory_bytes > int((self.memory / files[0]).read_text()):
                files.reverse()
            for name in files:
                _write(self.memory / name, memory)
            if (self.memory / "memory.kmem.tcp.limit_in_bytes").exists():
                _write(self.memory / "memory.kmem.tcp.limit_in_bytes", str(limits.socket_bytes))
        _write(self.pids / "pids.max", str(limits.tasks))
        if self.cpu is not None:
            quota = max(1000, round(limits.cpu_cores * _CPU_PERIOD_US))
            if self.version == 2:
                _write(self.cpu / "cpu.max", f"{quota} {_CPU_PERIOD_US}")
            else:
                _write(self.cpu / "cpu.cfs_period_us", str(_CPU_PERIOD_US))
                _write(self.cpu / "cpu.cfs_quota_us", str(quota))

    def remove(self) -> None:
        """Kill whatever is left in the run's cgroups and delete them."""
        directories = self.directories
        for directory in directories:
            if self.version == 2 and (directory / "cgroup.kill").exists():
                _write(directory / "cgroup.kill", "1")
        for directory in directories:
            for attempt in range(200):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    _kill_members(directory)
                    time.sleep(0.001 * min(attempt + 1, 10))


def _kill_members(directory: Path) -> None:
    try:
        pids = (directory / "cgroup.procs").read_text().split()
    except OSError:
        return
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


@dataclass(frozen=True)
class Cgroups:
    """Where runs' cgroups are made (see the module docs); ``cpu_parent`` is ``None`` where no
    CPU quota can be set."""

    version: int
    memory_parent: Path
    pids_parent: Path
    cpu_parent: Path | None = None

    @property
    def description(self) -> str:
        if self.version == 2:
            cpu = " + cpu.max" if self.cpu_parent else ""
            return f"cgroup v2 memory.max + pids.max{cpu} under {self.memory_parent}"
        cpu = f" + cpu.cfs_quota_us under {self.cpu_parent}" if self.cpu_parent else ""
        tcp = "memory.kmem.tcp.limit_in_bytes"
        sockets = f" + {tcp}" if (self.memory_parent / tcp).exists() else " (sockets unbounded)"
        return (f"cgroup v1 memory.limit_in_bytes{sockets} under {self.memory_parent} + "
                f"pids.max under {self.pids_parent}{cpu}")

    @property
    def parents(self) -> list[Path]:
        return list(dict.fromkeys(p for p in (self.memory_parent, self.pids_parent,
                                              self.cpu_parent) if p))

    def sweep(self) -> None:
        """Remove the cgroups that runs of processes no longer alive left behind: empty, and
        older than a run's set-up (one in use refuses to go)."""
        now = time.time()
        for parent in self.parents:
            for directory in parent.glob(f"{_PREFIX}*"):
                try:
                    if now - directory.stat().st_ctime > _STALE_S:
                        directory.rmdir()
                except OSError:
                    pass

    def create(self, limits: CgroupLimits) -> RunCgroup:
        """A fresh cgroup (one per hierarchy) holding at most ``limits``."""
        name = f"{_PREFIX}{secrets.token_hex(8)}"
        cpu = self.cpu_parent / name if self.cpu_parent else None
        run = RunCgroup(self.version, self.memory_parent / name, self.pids_parent / name, cpu)
        try:
            for directory in run.directories:
                directory.mkdir()
            run.set_limits(limits)
        except BaseException:
            run.remove()
            raise
        return run


def _v2_parent(
    mounts: list[tuple[str, str, str, set[str]]], own: dict[str, str]
) -> tuple[Path, bool] | None:
    """The v2 parent, with ``memory`` and ``pids`` enabled for its children, and whether
    ``cpu`` is too."""
    configured = os.environ.get(CGROUP_ENV_VAR, "").strip()
    candidates = [Path(configured)] if configured else []
    if not configured and "" in own:
        for fstype, root, point, _ in mounts:
            if fstype == "cgroup2" and (place := _inside(root, point, own[""])) is not None:
                candidates.append(place)
    for parent in candidates:
        try:
            enabled = set((parent / "cgroup.subtree_control").read_text().split())
            if not {"memory", "pids"} <= enabled:
                _write(parent / "cgroup.subtree_control", "+memory +pids")
            if "cpu" not in enabled:
                try:
                    _write(parent / "cgroup.subtree_control", "+cpu")
                except OSError:
                    return parent, False
            return parent, True
        except OSError:
            continue
    return None


def _v1_parent(
    mounts: list[tuple[str, str, str, set[str]]], own: dict[str, str], controller: str
) -> Path | None:
    for fstype, root, point, options in mounts:
        if fstype == "cgroup" and controller in options and controller in own:
            place = _inside(root, point, own[controller])
            if place is not None and os.access(place, os.W_OK):
                return place
    return None


def find_cgroups() -> Cgroups | None:
    """Where this process can make per-run cgroups with memory and pids limits (and a CPU quota
    where it can), if anywhere.

    The answer is checked by making (and removing) one run's cgroups.
    """
    mounts, own = _mounts(), _own_paths()
    found: list[Cgroups] = []
    if (v2 := _v2_parent(mounts, own)) is not None:
        parent, cpu = v2
        found.append(Cgroups(2, parent, parent, parent if cpu else None))
    memory, pids = _v1_parent(mounts, own, "memory"), _v1_parent(mounts, own, "pids")
    if memory is not None and pids is not None:
        found.append(Cgroups(1, memory, pids, _v1_parent(mounts, own, "cpu")))
    for cgroups in found:
        for each in (cgroups, Cgroups(cgroups.version, cgroups.memory_parent,
                                      cgroups.pids_parent)):
            try:
                each.create(CgroupLimits(64 << 20, 64 << 20, 4, 1.0)).remove()
            except OSError:
                continue
            each.sweep()
            return each
    return None
