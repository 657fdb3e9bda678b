"""``arlarena data``: the task panels of ``data/`` (list, build their hashes, check them).

``arlarena data list`` shows every panel; ``arlarena data build [NAME ...]`` generates the
tasks of the panels (all by default) and writes ``data/panels/<name>.json`` with every task's
content hash (rebuild after an env generator changed on purpose); ``arlarena data check
[NAME ...]`` generates them again and says plainly which no longer match; ``arlarena data
overlap HELD_OUT TRAIN`` counts the tasks of one panel whose content is also in another (a
held-out level that is also a training level).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arlarena_baselines.cli._choices import PANELS

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "data", help="task panels: list them, build or check their content hashes",
        description="Task panels are fixed task sets of an env (data/panels.yaml) with the "
        "content hash of every task (data/panels/<name>.json); see data/README.md.",
    )
    sub = p.add_subparsers(dest="data_command", required=True, metavar="ACTION")
    listing = sub.add_parser("list", help="list the task panels and their hashes")
    listing.set_defaults(func=run_list)
    for name, text, func in (
        ("build", "generate the panels' tasks and write their hashes", run_build),
        ("check", "generate the panels' tasks again and compare with their hashes", run_check),
    ):
        action = sub.add_parser(name, help=text, description=text + ".")
        action.add_argument("names", nargs="*", type=PANELS, metavar="NAME",
                            help="panels (default: all)")
        if name == "build":
            action.add_argument("--out", default=None, help="write DIR/panels/<name>.json "
                                "instead of into data/ (e.g. from an installed wheel)")
        action.set_defaults(func=func)
    overlap = sub.add_parser("overlap", help="tasks of a panel whose content is in others too",
                             description="Count the tasks of the first panel whose content "
                             "hash is also a task of the others, and the repeats within it.")
    overlap.add_argument("names", nargs="+", type=PANELS, metavar="NAME",
                         help="the panel to look at, then the panels to look in")
    overlap.set_defaults(func=run_overlap)


def _names(args: argparse.Namespace) -> list[str]:
    from arlarena_envs.panels import panel_specs

    return list(args.names) or list(panel_specs())


def run_list(args: argparse.Namespace) -> int:
    from arlarena_envs.panels import PanelError, load_panel, panel_specs

    for name, spec in panel_specs().items():
        try:
            state = load_panel(name).hash
        except PanelError:
            state = "not built"
        print(f"{name:<20} {state:<16} {spec.source:<9} {spec.summary}")
    return 0


def run_build(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    import arlarena_envs  # noqa: F401  (registers the ids)
    from arlarena_envs.panels import build_panel, panel_specs

    specs = panel_specs()
    for name in _names(args):
        with tqdm(total=specs[name].count, desc=f"building {name}", unit="task",
                  leave=False) as bar:
            panel = build_panel(name, out=Path(args.out) if args.out else None,
                                progress=bar.update)
        print(f"{name}: {panel.spec.count} tasks, hash {panel.hash}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    from arlarena_baselines.cli._panel import checked_panel
    from arlarena_envs.panels import PanelError

    status = 0
    for name in _names(args):
        try:
            _, record = checked_panel(name)
        except PanelError as error:
            print(f"error: {error}", file=sys.stderr)
            status = 1
            continue
        status = status or (0 if record["matches"] else 1)
    return status


def run_overlap(args: argparse.Namespace) -> int:
    from arlarena_envs.panels import load_panel

    first, *others = [load_panel(name) for name in args.names]
    hashes = [h for _, h in first.tasks]
    print(f"{first.name}: {len(hashes)} tasks, {len(set(hashes))} distinct")
    for other in others:
        theirs = {h for _, h in other.tasks}
        shared = sum(h in theirs for h in hashes)
        print(f"{shared} of {first.name}'s {len(hashes)} tasks are also tasks of {other.name}")
    return 0
