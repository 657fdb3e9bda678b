"""``arlarena report``: results tables from any set of JSONL result files.

The default table has a row per agent × env × group (all, each task type, each dataset);
``--compare`` prints the study's comparison instead (per env, a row per agent or method and a
column per task type); ``--csv`` also writes the rows in long form. A file given as
``LABEL=PATH`` is shown under ``LABEL`` (e.g. the training method of a checkpoint) instead of
the agent name recorded in it.

``--compare`` refuses to put results on different tasks in one table: when the episodes of an
env come from different task panels, from one panel whose tasks hashed differently (its
generator changed), or, without a panel, from different splits (reset options) or seed ranges,
it names them and stops, unless ``--mixed-panels`` is given.

Each episode counts once (:mod:`~arlarena_baselines.evaluation.merge`): a file given twice, a
copy of one, or a rerun of the same settings in another folder, is dropped with a warning. An
agent's results under different settings (temperature, endpoint, ...) get a row per setting,
named after what differs, unless ``--merge-settings``; then a row that mixes settings gets a
warning. A row whose cost is partial (results with and without prices, replies without token
counts) gets a warning too. What API agents spent (attempts, failures by kind, billed tokens,
cost) follows the table, and is shown even when no episode finished.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

__all__ = ["register", "task_sets"]


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
    p.add_argument("--mixed-panels", action="store_true", help="with --compare: put results "
                   "on different task panels (or panel hashes), splits or seed ranges of one "
                   "env in one table anyway")
    p.add_argument("--merge-settings", action="store_true", help="put an agent's results "
                   "under different settings (temperature, endpoint, ...) in one row (default: "
                   "a row per setting, named after the settings that differ)")
    p.add_argument("--csv", default=None, metavar="PATH", help="also write the rows as CSV")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from arlarena_baselines.evaluation import (
        format_comparison,
        format_table,
        summarize,
        write_csv,
    )
    from arlarena_baselines.evaluation.merge import load_results, mixed_settings, per_setting
    from arlarena_baselines.evaluation.report import format_spend
    from arlarena_baselines.evaluation.spending import total_spend

    try:
        records, warnings = load_results(args.files)
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.merge_settings:
        warnings += mixed_settings(records)
    else:
        records = per_setting(records)
    rows = summarize(records)
    warnings += [f"the cost of {r.agent} on {r.env} is partial: some of its episodes ran "
                 "without a price, or some replies came without token counts"
                 for r in rows if r.cost_partial and r.group == "all"]
    warnings += [f"{r.no_usage} replies of {r.agent} on {r.env} came without token counts: "
                 "their tokens and cost are missing"
                 for r in rows if r.no_usage and r.group == "all"]
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    spent = total_spend(records)
    if not rows:
        print("no finished episodes in the given files", file=sys.stderr)
        if spent:
            print("API spending (every run, failed attempts included):\n\n"
                  + format_spend(spent))
        return 1
    sets = task_sets(records)
    conflicts = [line for line, count in sets if count > 1] if args.compare else []
    if conflicts and not args.mixed_panels:
        print("error: these results ran on different tasks, so --compare will not put them in "
              "one table (pass --mixed-panels to do it anyway):\n" + "\n".join(conflicts),
              file=sys.stderr)
        return 2
    print(format_comparison(rows) if args.compare else format_table(rows))
    print("\n".join(f"tasks of {line}" for line, _ in sets))
    if spent:
        print("\nAPI spending (every run, failed attempts included):\n\n" + format_spend(spent))
    if args.csv:
        Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
        with open(args.csv, "w", encoding="utf-8", newline="") as handle:
            write_csv(rows, handle)
        print(f"csv: {args.csv}", file=sys.stderr)
    return 0


def task_sets(records: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """Per env, the task sets its finished episodes come from: a line naming each (task panel,
    hash of the tasks run, the agents on it; no panel: the reset options, i.e. the split, from
    the settings record and the seeds run) and how many there are.

    >>> task_sets([{"type": "episode", "env": "E", "agent": "a",
    ...             "panel": {"name": "p", "hash": "h1", "tasks": 3}},
    ...            {"type": "episode", "env": "E", "agent": "b", "seed": 4}])
    [('E: no panel (unrecorded options, seeds 4..4): b; p (hash h1, 3 tasks): a', 2)]
    """
    options = {str(r.get("digest")): json.dumps(r["env"].get("reset_options") or {},
                                                sort_keys=True, default=str)
               for r in records if r.get("type") == "settings" and isinstance(r.get("env"), dict)}
    seeds: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    sets: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for record in records:
        if record.get("type") != "episode":
            continue
        env, agent, panel = str(record.get("env")), str(record.get("agent")), record.get("panel")
        if panel:
            name = f"{panel.get('name')} (hash {panel.get('hash')}, {panel.get('tasks')} tasks)"
            sets[env][name].add(agent)
        else:
            split = options.get(str(record.get("settings")), "unrecorded options")
            seed = record.get("seed")
            seeds[env, split, agent].append(seed if isinstance(seed, int) else -1)
    for (env, split, agent), found in seeds.items():
        sets[env][f"no panel ({split}, seeds {min(found)}..{max(found)})"].add(agent)
    return [
        (f"{env}: " + "; ".join(f"{name}: {', '.join(sorted(agents))}"
                                for name, agents in sorted(found.items())), len(found))
        for env, found in sets.items()
    ]
