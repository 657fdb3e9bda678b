"""``arlarena report``: the results table from any set of JSONL result files."""

from __future__ import annotations

import argparse
import sys

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("report", help="summarise JSONL results files as a table")
    p.add_argument("files", nargs="+", help="results files written by 'arlarena eval'")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from arlarena_baselines.evaluation import format_table, read_records, summarize

    records = []
    for name in args.files:
        try:
            records += list(read_records(name))
        except OSError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    rows = summarize(records)
    if not rows:
        print("no finished episodes in the given files", file=sys.stderr)
        return 1
    print(format_table(rows))
    return 0
