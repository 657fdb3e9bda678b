"""``arlarena report``: results tables from any set of JSONL result files.

The default table has a row per agent × env × group (all, each task type, each dataset);
``--compare`` prints the study's comparison instead (per env, a row per agent or method and a
column per task type); ``--csv`` also writes the rows in long form. A file given as
``LABEL=PATH`` is shown under ``LABEL`` (e.g. the training method of a checkpoint) instead of
the agent name recorded in it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report", help="summarise JSONL results files as a table",
        description="Summarise results files written by 'arlarena eval'.",
    )
    p.add_argument("files", nargs="+", metavar="[LABEL=]FILE",
                   help="results files; LABEL= names the row (default: the recorded agent)")
    p.add_argument("--compare", action="store_true",
                   help="per env, one row per agent and one column per task type "
                   "(success / score)")
    p.add_argument("--csv", default=None, metavar="PATH", help="also write the rows as CSV")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from arlarena_baselines.evaluation import (
        format_comparison,
        format_table,
        summarize,
        write_csv,
    )
    from arlarena_baselines.evaluation.results import read_labelled

    records = []
    for name in args.files:
        try:
            records += read_labelled(name)
        except OSError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    rows = summarize(records)
    if not rows:
        print("no finished episodes in the given files", file=sys.stderr)
        return 1
    print(format_comparison(rows) if args.compare else format_table(rows))
    if args.csv:
        Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
        with open(args.csv, "w", encoding="utf-8", newline="") as handle:
            write_csv(rows, handle)
        print(f"csv: {args.csv}", file=sys.stderr)
    return 0
