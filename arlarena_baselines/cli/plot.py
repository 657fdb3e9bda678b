"""``arlarena plot RUN_DIR``: draw a run's training curves and stability diagnostics."""

from __future__ import annotations

import argparse
import sys

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "plot",
        help="draw a training run's curves and diagnostics to PNG",
        description="Read RUN_DIR/metrics.jsonl and write PNGs: training curves (success, "
        "valid-format ratio, return) and, for RL, the stability diagnostics panel (KLs, "
        "gradient norm, out-of-band ratio fractions, clip fraction, KL shares).",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a folder written by arlarena train")
    p.add_argument("--out", default=None, help="folder for the PNGs (default RUN_DIR/plots)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from arlarena_baselines.trainer.plots import plot_run

    try:
        paths = plot_run(args.run_dir, args.out)
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0
