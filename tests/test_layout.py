"""The layout shows the architecture: imports go one way, and each package says what it holds.

Every ``import`` of the three packages counts, a function's or a ``TYPE_CHECKING`` block's too:
no module reaches itself again through its imports, the envs (``arlarena_envs``) import nothing
of the study's interface (``wrappers``) or the baselines, ``wrappers`` nothing of the
baselines, and every package's ``__init__`` docstring opens with one line of what lives there.
Inside ``arlarena_baselines`` the sub-packages and top-level modules stand on floors
(:data:`FLOORS`): a module imports its own sub-package and the floors below, never one beside or
above (the CLI on top; the config bounds, the algorithms, the episode loop and the action-flow
analysis at the bottom).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("arlarena_envs", "wrappers", "arlarena_baselines")
FLOORS: tuple[tuple[str, ...], ...] = (
    ("bounds",),  # the config fields' bounds, checked in one place
    ("algos", "rollout", "analysis"),  # the loss parts, the one episode loop, action flows
    ("evaluation",),  # results files, on the loop
    ("trainer",),  # SFT, RL and held-out evaluation, on evaluation and the algorithms
    ("arena", "openrlhf"),  # many trainer runs; the trainer's settings on OpenRLHF
    ("integrations",),  # TRL, on the OpenRLHF agent's chat turns and task labels
    ("cli",),  # parses and calls
)
"""The floors of ``arlarena_baselines``' sub-packages and top-level modules, bottom first."""


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of the three packages that ``name`` imports anywhere in its text."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_module_imports_itself_back():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_imports_go_from_the_baselines_to_the_interface_to_the_envs():
    upward = {"arlarena_envs": ("wrappers", "arlarena_baselines"),
              "wrappers": ("arlarena_baselines",)}
    arrows = [f"{name} -> {target}" for name, targets in _graph().items()
              for target in targets for package, above in upward.items()
              if name.split(".")[0] == package and target.split(".")[0] in above]
    assert arrows == []


def _floor_arrows(graph: dict[str, set[str]]) -> list[str]:
    """The imports of ``arlarena_baselines`` that go to its own floor or up (a sub-package of
    the package's ``__init__`` is on no floor and counts as the top)."""
    floor = {sub: level for level, subs in enumerate(FLOORS) for sub in subs}

    def level(module: str) -> tuple[str, int]:
        parts = module.split(".")
        sub = parts[1] if len(parts) > 1 else ""
        return sub, floor.get(sub, len(FLOORS))

    arrows = []
    for name, targets in graph.items():
        if not name.startswith("arlarena_baselines."):
            continue
        sub, here = level(name)
        for target in targets:
            if target.startswith("arlarena_baselines."):
                other, there = level(target)
                if other != sub and there >= here:
                    arrows.append(f"{name} -> {target}")
    return sorted(arrows)


def test_the_baselines_floors_are_every_sub_package_and_module():
    subs = {p.name for p in (ROOT / "arlarena_baselines").iterdir() if (p / "__init__.py").exists()}
    subs |= {p.stem for p in (ROOT / "arlarena_baselines").glob("*.py") if p.stem != "__init__"}
    assert sorted(subs) == sorted(sub for floor in FLOORS for sub in floor)


def test_inside_the_baselines_imports_go_down_the_floors():
    assert _floor_arrows(_graph()) == []


def test_the_floor_check_finds_an_upward_arrow():
    graph = {"arlarena_baselines.openrlhf.launch": {"arlarena_baselines.cli"},
             "arlarena_baselines.trainer.rl": {"arlarena_baselines.algos.methods"},
             "arlarena_baselines.arena.plan": {"arlarena_baselines.openrlhf.settings"}}
    assert _floor_arrows(graph) == ["arlarena_baselines.arena.plan -> "
                                    "arlarena_baselines.openrlhf.settings",
                                    "arlarena_baselines.openrlhf.launch -> arlarena_baselines.cli"]


def test_every_package_says_in_one_line_what_lives_there():
    for init in sorted(p for package in PACKAGES for p in (ROOT / package).rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc, f"{init.relative_to(ROOT)} has no docstring"
        summary = doc.split("\n\n")[0]
        assert "\n" not in summary and len(summary) <= 99, f"{init.relative_to(ROOT)}: {summary!r}"
