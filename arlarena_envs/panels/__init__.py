"""Task panels: named, fixed task sets that results can name, with content hashes.

A panel (``data/panels.yaml``) is an env, its reset options and a range of seeds; building it
(``arlarena data build``) writes ``data/panels/<name>.json`` with the content hash of every
task (:mod:`.content`: level grids, goals, game files, problems). ``arlarena eval --panel``,
``arlarena train --panel`` / ``--eval-panel`` and the OpenRLHF task writer run a panel's tasks,
generate them again to check the hashes, and record the panel's name and hash.

This module holds :class:`PanelSpec` (env, reset options, seeds: one entry of ``data/panels.yaml``),
:class:`Panel` (a spec with the hash of every task, ``data/panels/<name>.json``),
:class:`Check` (a panel's tasks generated again and compared), :func:`data_dir`,
:func:`panel_specs`, :func:`load_panel`, :func:`compute_tasks`, :func:`check_panel` and
:func:`build_panel`.

``data/`` is found in the source checkout, or where a wheel installs it
(``<prefix>/share/arlarena/data``), or at ``$ARLARENA_DATA``. A panel's hash covers its env,
reset options, env kwargs, seeds and every task's content hash, so results that record it say
exactly which tasks they ran; the hash of its first ``n`` tasks names a shorter run.

>>> panel_specs()["sokoban-eval"].env
'ARLArena/Sokoban-v0'
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import gymnasium as gym
import yaml

from arlarena_envs.panels.content import digest, task_content, task_hash
from arlarena_envs.registration import ENV_SPECS, resolve_env_id

__all__ = [
    "Check",
    "Panel",
    "PanelError",
    "PanelSpec",
    "build_panel",
    "check_panel",
    "compute_tasks",
    "data_dir",
    "load_panel",
    "panel_specs",
]

SPECS_FILE = "panels.yaml"
BUILT_DIR = "panels"


class PanelError(ValueError):
    """A panel that is unknown, not built, or built from another definition."""


def _candidates() -> list[Path]:
    env = os.environ.get("ARLARENA_DATA")
    found = [Path(env)] if env else []
    found.append(Path(__file__).resolve().parents[2] / "data")  # a source checkout
    prefixes = (sysconfig.get_path("data"), sys.prefix, sysconfig.get_path("data", "posix_user"))
    for prefix in dict.fromkeys(prefixes):
        found.append(Path(prefix) / "share" / "arlarena" / "data")  # a wheel's data files
    return found


def data_dir() -> Path:
    """The ``data/`` folder holding ``panels.yaml`` (see the module docs for where it looks)."""
    for path in _candidates():
        if (path / SPECS_FILE).is_file():
            return path
    raise PanelError("no data/panels.yaml found (looked in "
                     f"{', '.join(str(p) for p in _candidates())}); set ARLARENA_DATA")


@dataclass(frozen=True)
class PanelSpec:
    """One task panel: the tasks ``reset(seed=s, options=options)`` for ``s`` in
    ``seed .. seed + count - 1`` of ``gymnasium.make(env, **env_kwargs)``.

    Attributes:
        name: the panel's name (``--panel NAME``).
        env: the gymnasium id.
        seed, count: the first seed and the number of tasks.
        options: reset options of every task (e.g. ``{"split": "eval"}``).
        env_kwargs: keyword arguments of ``gymnasium.make``.
        about: what the panel is for.
        source: ``generated`` (our generators) or ``real`` (shipped original data).
    """

    name: str
    env: str
    seed: int
    count: int
    options: dict[str, Any] = field(default_factory=dict)
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    about: str = ""
    source: str = "generated"

    @property
    def seeds(self) -> range:
        return range(self.seed, self.seed + self.count)

    @property
    def family(self) -> str:
        """The ``arlarena_envs`` sub-package of the env (``sokoban``, ``webshop``, ...)."""
        return ENV_SPECS[self.env].entry_point.split(":")[0].split(".")[1]

    @property
    def summary(self) -> str:
        """One line: env, options, seeds, purpose."""
        options = "".join(f" {k}={v}" for k, v in self.options.items())
        last = self.seed + self.count - 1
        return f"{self.env}{options}, seeds {self.seed}..{last}: {self.about}".rstrip(": ")

    def definition(self) -> dict[str, Any]:
        """What decides the tasks (the part of the spec the hash covers)."""
        return {"env": self.env, "env_kwargs": self.env_kwargs, "options": self.options,
                "seed": self.seed}


@cache
def _specs(path: Path, mtime: float) -> dict[str, PanelSpec]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    specs = {}
    for name, entry in data.items():
        entry = dict(entry)
        entry["env"] = resolve_env_id(entry["env"])
        specs[name] = PanelSpec(name=name, **entry)
    return specs


def panel_specs(root: Path | None = None) -> dict[str, PanelSpec]:
    """Every panel defined in ``data/panels.yaml``."""
    path = (root or data_dir()) / SPECS_FILE
    return _specs(path, path.stat().st_mtime)


def _spec(name: str, root: Path | None) -> PanelSpec:
    specs = panel_specs(root)
    if name not in specs:
        raise PanelError(f"unknown task panel {name!r}; known: {', '.join(specs)}")
    return specs[name]


@dataclass(frozen=True)
class Panel:
    """A built panel: its spec and every task's ``(id, content hash)``, in seed order."""

    spec: PanelSpec
    tasks: tuple[tuple[str, str], ...]
    hash: str

    @property
    def name(self) -> str:
        return self.spec.name

    def hash_of(self, count: int | None = None) -> str:
        """The hash of the first ``count`` tasks (all: the panel's hash)."""
        return _panel_hash(self.spec, [h for _, h in self.tasks[: count or len(self.tasks)]])


def _panel_hash(spec: PanelSpec, hashes: list[str]) -> str:
    return digest({**spec.definition(), "tasks": hashes})


def load_panel(name: str, root: Path | None = None) -> Panel:
    """The built panel ``name``; a :class:`PanelError` if it is unknown, not built, or built
    from another definition than ``panels.yaml`` now holds."""
    root = root or data_dir()
    spec = _spec(name, root)
    path = root / BUILT_DIR / f"{name}.json"
    if not path.is_file():
        raise PanelError(f"task panel {name!r} has no hashes yet ({path}): run "
                         f"`arlarena data build {name}`")
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("definition") != spec.definition() or data.get("count") != spec.count:
        raise PanelError(f"task panel {name!r} was edited in {root / SPECS_FILE} since its "
                         f"hashes were built: run `arlarena data build {name}`")
    return Panel(spec, tuple((str(i), str(h)) for i, h in data["tasks"]), str(data["hash"]))


def compute_tasks(
    spec: PanelSpec,
    count: int | None = None,
    progress: Callable[[int], None] | None = None,
    env_kwargs: dict[str, Any] | None = None,
) -> list[tuple[str, str]]:
    """Generate the first ``count`` tasks of ``spec`` (all by default): ``(id, hash)`` each.
    ``env_kwargs`` are added to the spec's (a run's own, so the check sees what it runs)."""
    env = gym.make(spec.env, **{**spec.env_kwargs, **(env_kwargs or {})})
    try:
        tasks = []
        for seed in spec.seeds[: spec.count if count is None else count]:
            task_id, content = task_content(env, spec.family, seed, spec.options)
            tasks.append((task_id, task_hash(content)))
            if progress is not None:
                progress(1)
        return tasks
    finally:
        env.close()


@dataclass(frozen=True)
class Check:
    """A panel's first ``count`` tasks generated again: their hash and any mismatch.

    Attributes:
        name: the panel.
        count: tasks generated (the panel's first ``count``).
        of: the panel's tasks.
        expected: the hash of those tasks in the panel file.
        actual: the hash of what was generated now (what a run on them records).
        changed: the seeds whose content differs from the panel file.
    """

    name: str
    count: int
    of: int
    expected: str
    actual: str
    changed: tuple[int, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.changed

    def record(self) -> dict[str, Any]:
        """What results files and run folders record of the panel."""
        return {"name": self.name, "hash": self.actual, "tasks": self.count, "matches": self.ok}

    def message(self) -> str:
        """A plain statement of the check's outcome."""
        tasks = (f"all {self.count} tasks" if self.count == self.of
                 else f"its first {self.count} of {self.of} tasks")
        if self.ok:
            return f"task panel {self.name}: {tasks} match its hashes (hash {self.actual})"
        first = ", ".join(map(str, self.changed[:5]))
        return (
            f"WARNING: task panel {self.name} no longer generates the tasks it was built with: "
            f"{len(self.changed)} of {tasks} differ (seeds {first}"
            f"{', ...' if len(self.changed) > 5 else ''}), so an env generator or a dependency "
            f"changed. These results record the new hash {self.actual} (the panel file says "
            f"{self.expected}) and are not comparable with results on the old tasks; if the "
            f"change is intended, rebuild the panel with `arlarena data build {self.name}`."
        )


def check_panel(
    panel: Panel,
    count: int | None = None,
    progress: Callable[[int], None] | None = None,
    env_kwargs: dict[str, Any] | None = None,
) -> Check:
    """Generate ``panel``'s first ``count`` tasks (all by default; with ``env_kwargs`` added
    to the spec's) and compare their hashes."""
    count = panel.spec.count if count is None else count
    if not 0 < count <= panel.spec.count:
        raise PanelError(f"task panel {panel.name} has {panel.spec.count} tasks; a run "
                         f"cannot take {count} of them")
    tasks = compute_tasks(panel.spec, count, progress, env_kwargs)
    changed = tuple(seed for seed, (_, now), (_, then)
                    in zip(panel.spec.seeds, tasks, panel.tasks, strict=False) if now != then)
    actual = _panel_hash(panel.spec, [h for _, h in tasks])
    return Check(panel.name, count, panel.spec.count, panel.hash_of(count), actual, changed)


def build_panel(name: str, root: Path | None = None, out: Path | None = None,
                progress: Callable[[int], None] | None = None) -> Panel:
    """Generate every task of panel ``name`` and write ``<out>/panels/<name>.json``
    (default ``out``: the ``data/`` folder of the spec)."""
    root = root or data_dir()
    spec = _spec(name, root)
    tasks = compute_tasks(spec, progress=progress)
    panel = Panel(spec, tuple(tasks), _panel_hash(spec, [h for _, h in tasks]))
    path = (out or root) / BUILT_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    head = {"name": name, "hash": panel.hash, "count": spec.count,
            "definition": spec.definition(), "about": spec.about, "source": spec.source}
    # One task per line: a rebuilt panel's diff shows which tasks changed.
    rows = ",\n".join(json.dumps(list(t), ensure_ascii=False) for t in tasks)
    text = json.dumps(head, indent=1, ensure_ascii=False)[:-2] + f',\n "tasks": [\n{rows}\n ]\n}}\n'
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return panel
