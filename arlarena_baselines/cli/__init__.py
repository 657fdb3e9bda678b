"""The ``arlarena`` command line: one sub-command per module of this package.

Each module here defines ``register(subparsers)``, which adds its sub-command and sets
``func`` (called with the parsed ``argparse.Namespace``, returning an exit code). Modules are
discovered, so adding a command means adding a module (modules named ``_*`` are helpers, e.g.
:mod:`._choices`, the options' fixed sets of values).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import signal
import sys
from collections.abc import Sequence

from arlarena_baselines.cli._choices import ArenaParser
from arlarena_baselines.cli._extras import missing_extra

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The ``arlarena`` parser with every sub-command module of this package registered."""
    parser = ArenaParser(prog="arlarena", description="ARLArena: stable agentic RL for LLMs.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module.name.startswith("_") or module.name == "__main__":
            continue
        importlib.import_module(f"{__name__}.{module.name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``arlarena`` console script; returns the exit code (2 for a bad
    command line, after argparse's message; 1 with one line naming the extra to install when
    a command needs an optional part that is missing)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # What follows the first `--` is passed on as it is, to the commands that pass it on.
    cut = argv.index("--") if "--" in argv else len(argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv[:cut])
        if cut < len(argv) and not hasattr(args, "passthrough"):
            parser.error(f"{args.command} takes no arguments after `--`")
    except SystemExit as stop:  # --help, or a bad value: argparse has printed why
        return stop.code if isinstance(stop.code, int) else 0
    if hasattr(args, "passthrough"):
        args.passthrough = argv[cut + 1 :]
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt as interrupt:  # Ctrl-C, or SIGTERM where a command handles it
        print("interrupted; results written so far are kept", file=sys.stderr)
        return 128 + getattr(interrupt, "signum", signal.SIGINT)
    except ImportError as error:  # an optional part not installed: name its extra
        message = missing_extra(error)
        if message is None:
            raise
        print(message, file=sys.stderr)
        return 1
