"""What of the installed Python packages the sandbox shows: an allowlist, and the package trees
it hides.

Holds :data:`SANDBOX_PACKAGES` (the one list of what model-written code may import),
:func:`allowed_entries` (the files and directories of a site-packages directory that belong to
those distributions or to what they require) and :func:`python_trees` (the site-packages and
dist-packages directories under a mounted system directory, which the sandbox covers).

Everything else installed stays out of the sandbox: the evaluation sets and problem generators
(``champ_dataset``, ``reasoning_gym``: the answer key of every TIR panel), this project, model
weights, torch, vLLM, transformers and whatever else holds data.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path

__all__ = ["SANDBOX_PACKAGES", "allowed_entries", "python_trees"]

SANDBOX_PACKAGES: tuple[str, ...] = ("numpy", "sympy", "mpmath", "scipy")
"""The distributions model-written code may import, with the distributions they require (not
those of their extras). One not installed is skipped. Add to it only libraries that hold no
data a task's answer could come from."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _required(distribution: metadata.Distribution) -> list[str]:
    """The names of what ``distribution`` requires, its extras' requirements left out (other
    markers kept: a requirement that may not apply here is shown rather than missed)."""
    names = []
    for requirement in distribution.requires or ():
        marker = requirement.partition(";")[2]
        if "extra" not in marker and (match := _NAME.match(requirement.strip())):
            names.append(_normal(match.group(0)))
    return names


def _installed(site_dirs: Sequence[Path]) -> dict[str, metadata.Distribution]:
    """Every distribution installed in ``site_dirs`` by normalised name (the first one found)."""
    found: dict[str, metadata.Distribution] = {}
    for distribution in metadata.distributions(path=[str(d) for d in site_dirs]):
        name = distribution.metadata["Name"]
        if name:
            found.setdefault(_normal(name), distribution)
    return found


def allowed_entries(site_dirs: Sequence[Path], packages: Iterable[str] = SANDBOX_PACKAGES,
                    ) -> dict[Path, list[str]]:
    """For each of ``site_dirs``, the names of its entries (top-level packages, modules, bundled
    libraries, metadata directories) that belong to ``packages`` or to what they require."""
    installed = _installed(site_dirs)
    wanted, todo = set(), [_normal(p) for p in packages]
    while todo:
        name = todo.pop()
        if name in wanted or name not in installed:
            continue
        wanted.add(name)
        todo += _required(installed[name])
    entries: dict[Path, set[str]] = {Path(d): set() for d in site_dirs}
    for name in wanted:
        distribution = installed[name]
        for file in distribution.files or ():
            if file.parts and file.parts[0] not in ("..", "__pycache__"):  # shared by all
                path = Path(str(file.locate()))
                for site_dir in entries:
                    if path.is_relative_to(site_dir) and path != site_dir:
                        entries[site_dir].add(path.relative_to(site_dir).parts[0])
    return {d: sorted(e for e in names if (d / e).exists()) for d, names in entries.items()}


def python_trees(root: Path) -> list[Path]:
    """The site-packages and dist-packages directories of the Python installations under
    ``root`` (``/usr``, an interpreter's prefix): what ``pip`` and the system's package manager
    install into."""
    patterns = ("lib*/python*/site-packages", "lib*/python*/dist-packages",
                "local/lib*/python*/site-packages", "local/lib*/python*/dist-packages")
    return sorted({p for pattern in patterns for p in root.glob(pattern) if p.is_dir()})
