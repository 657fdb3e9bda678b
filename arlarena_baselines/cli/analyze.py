"""``arlarena analyze``: action-flow analysis of results files (types, transitions, loops,
Sankey graphs)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "analyze", help="action-flow analysis of results files (Sankey graphs, loops)",
        description="Classify every action by type, count step-wise transitions and loops per "
        "outcome, and draw Sankey graphs (all episodes coloured by outcome; failures only "
        "coloured by action type) as HTML and PNG, per agent and env.",
    )
    p.add_argument("files", nargs="+", metavar="[LABEL=]FILE",
                   help="results files of 'arlarena eval'; LABEL= renames the agent")
    p.add_argument("--out", default="analysis", help="directory for graphs, CSV and JSON")
    p.add_argument("--max-steps", type=int, default=10, help="steps shown in the Sankey graphs")
    p.add_argument("--top", type=int, default=10, help="transitions listed per outcome")
    p.add_argument("--png-backend", choices=("auto", "kaleido", "matplotlib"), default="auto",
                   help="kaleido (plotly's renderer, needs a Chrome) or matplotlib; auto "
                   "falls back to matplotlib")
    p.add_argument("--no-png", action="store_true", help="skip the PNG graphs")
    p.add_argument("--no-html", action="store_true", help="skip the HTML graphs (needs plotly)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from arlarena_baselines.analysis import (
        analyze,
        build_sankey,
        episode_flows,
        format_analysis,
        write_html,
        write_loops_csv,
        write_pngs,
    )
    from arlarena_baselines.analysis.flows import FAILURE
    from arlarena_baselines.evaluation.merge import load_results

    if args.max_steps < 1:
        print("error: --max-steps must be >= 1", file=sys.stderr)
        return 2
    try:
        records, warnings = load_results(args.files)
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    groups = defaultdict(list)
    for flow in episode_flows(records):
        groups[(flow.agent, flow.env)].append(flow)
    if not groups:
        print("no finished episodes in the given files", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pngs, written = [], []
    for (agent, env), flows in groups.items():
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{env.split('/')[-1]}__{agent}")
        title = f"{agent} on {env}"
        print(format_analysis(flows, title, args.top) + "\n")
        (out / f"{slug}_analysis.json").write_text(json.dumps(analyze(flows), indent=1))
        with open(out / f"{slug}_loops.csv", "w", encoding="utf-8", newline="") as handle:
            write_loops_csv(flows, handle)
        written += [out / f"{slug}_analysis.json", out / f"{slug}_loops.csv"]
        failures = [f for f in flows if f.outcome == FAILURE]
        graphs = {"sankey": build_sankey(
            flows, max_steps=args.max_steps,
            title=f"{title}: first {args.max_steps} steps, by outcome")}
        if failures:
            graphs["failures"] = build_sankey(
                failures, max_steps=args.max_steps, color_by="action",
                title=f"{title}: failed episodes ({len(failures)}), by action type")
        for kind, sankey in graphs.items():
            if not sankey.links:  # e.g. every episode ended with an error before acting
                continue
            if not args.no_html:
                written.append(write_html(sankey, out / f"{slug}_{kind}.html"))
            pngs.append((sankey, out / f"{slug}_{kind}.png"))
    if pngs and not args.no_png:
        backend = write_pngs(pngs, args.png_backend)
        written += [path for _, path in pngs]
        print(f"PNG graphs drawn with {backend}", file=sys.stderr)
    print("written: " + ", ".join(str(p) for p in written))
    return 0
