"""Per-run cgroups for the sandbox: one memory and process budget for a run as a whole.

Holds :func:`find_cgroups` (``-> Cgroups | None``), :class:`Cgroups` (``create(memory_bytes,
max_processes) -> RunCgroup``) and :class:`RunCgroup` (``add(pid)``, ``set_limits``,
``usage()``, ``oom_kills()`` / ``oom_killed()``, ``remove()``). A cold run has a cgroup of its
own; a warm server has one for its life, which each of its runs enters by being forked there
(no migration on a run's path: moving a task between cgroups waits for an RCU grace period,
some 7 ms per hierarchy on an idle machine). Stale cgroups of dead processes are removed when
the next process looks.

With cgroup v2, each run gets one directory under a parent that has the ``memory`` and ``pids``
controllers enabled for its children: ``ARLARENA_SANDBOX_CGROUP`` if set (a delegated
subtree), else this process's own cgroup where it may enable them (the root of a container's
cgroup namespace, say). With cgroup v1, each run gets one directory in the memory hierarchy and
one in the pids hierarchy, under this process's own cgroups there. A run's limits are
``memory.max`` / ``memory.limit_in_bytes`` (swap off too), which charges every page of every
process of the run, its ``/tmp`` included, and ``pids.max``. Nothing here runs unless the
directories are writable; :func:`find_cgroups` returns ``None`` otherwise.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CGROUP_ENV_VAR", "Cgroups", "RunCgroup", "find_cgroups"]

CGROUP_ENV_VAR = "ARLARENA_SANDBOX_CGROUP"
"""A cgroup v2 directory whose children may use ``memory`` and ``pids`` (a delegated subtree)."""

_COUNTER = itertools.count()
_PREFIX = "arlarena-sandbox-"


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
class RunCgroup:
    """The cgroup directories of one run (one for v2, memory and pids for v1)."""

    version: int
    memory: Path
    pids: Path

    def add(self, pid: int) -> None:
        """Move process ``pid`` (not its existing children) into the run's cgroups."""
        for directory in dict.fromkeys((self.memory, self.pids)):
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

    def set_limits(self, memory_bytes: int, max_processes: int) -> None:
        """Hold at most ``memory_bytes`` (swap off) and ``max_processes`` tasks."""
        if self.version == 2:
            _write(self.memory / "memory.max", str(memory_bytes))
            if (self.memory / "memory.swap.max").exists():
                _write(self.memory / "memory.swap.max", "0")
        else:  # v1 keeps memory.limit_in_bytes <= memory.memsw.limit_in_bytes at every write
            files = ["memory.limit_in_bytes"]
            if (self.memory / "memory.memsw.limit_in_bytes").exists():
                files.append("memory.memsw.limit_in_bytes")
            if memory_bytes > int((self.memory / files[0]).read_text()):
                files.reverse()
            for name in files:
                _write(self.memory / name, str(memory_bytes))
        _write(self.pids / "pids.max", str(max_processes))

    def remove(self) -> None:
        """Kill whatever is left in the run's cgroups and delete them."""
        directories = list(dict.fromkeys((self.memory, self.pids)))
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
    """Where runs' cgroups are made (see the module docs)."""

    version: int
    memory_parent: Path
    pids_parent: Path

    @property
    def description(self) -> str:
        if self.version == 2:
            return f"cgroup v2 memory.max + pids.max under {self.memory_parent}"
        return (f"cgroup v1 memory.limit_in_bytes under {self.memory_parent} + pids.max under "
                f"{self.pids_parent}")

    def sweep(self) -> None:
        """Remove the empty cgroups that runs of processes no longer alive left behind."""
        for parent in dict.fromkeys((self.memory_parent, self.pids_parent)):
            for directory in parent.glob(f"{_PREFIX}*-*"):
                owner = directory.name[len(_PREFIX):].split("-")[0]
                if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                    try:
                        directory.rmdir()
                    except OSError:
                        pass

    def create(self, memory_bytes: int, max_processes: int) -> RunCgroup:
        """A fresh cgroup (pair) holding at most ``memory_bytes`` and ``max_processes`` tasks."""
        name = f"{_PREFIX}{os.getpid()}-{next(_COUNTER)}"
        memory, pids = self.memory_parent / name, self.pids_parent / name
        run = RunCgroup(self.version, memory, pids)
        try:
            for directory in dict.fromkeys((memory, pids)):
                directory.mkdir()
            run.set_limits(memory_bytes, max_processes)
        except BaseException:
            run.remove()
            raise
        return run


def _v2_parent(mounts: list[tuple[str, str, str, set[str]]], own: dict[str, str]) -> Path | None:
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
            return parent
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
    """Where this process can make per-run cgroups with memory and pids limits, if anywhere.

    The answer is checked by making (and removing) one run's cgroups.
    """
    mounts, own = _mounts(), _own_paths()
    found: list[Cgroups] = []
    if (parent := _v2_parent(mounts, own)) is not None:
        found.append(Cgroups(2, parent, parent))
    memory, pids = _v1_parent(mounts, own, "memory"), _v1_parent(mounts, own, "pids")
    if memory is not None and pids is not None:
        found.append(Cgroups(1, memory, pids))
    for cgroups in found:
        try:
            cgroups.create(64 << 20, 4).remove()
        except OSError:
            continue
        cgroups.sweep()
        return cgroups
    return None
