"""The held-out comparison of `make learn-alfworld`: the BC start against RL on both eval splits.

For each held-out panel (``alfworld-compact-heldout-id``: the 140 in-distribution games, and
``alfworld-compact-heldout-ood``: the 134 out-of-distribution games, each four times; apart by
content from every training and validation game), this script

1. checks the panel's tasks against their hashes (recorded in ``summary.json``);
2. plays the start at every temperature of ``--sweep`` (``OUT/<split>/T<t>/BC.jsonl``);
3. picks the start's best temperature on that split (the best of five on the held-out games
   themselves: biased upward for the start, so it only makes RL's case harder);
4. plays each RL model of ``--rl`` at ``--temperatures`` and at that best temperature, on the
   same games with the same random streams as the start (``OUT/<split>/T<t>/<label>.jsonl``,
   a label's ``/`` as ``-``), paired with the start game by game and sample by sample
   (``compare.json`` there); several RL models (the nine runs of three methods x three seeds)
   share one start's episodes;
5. writes ``summary.json`` (the sweep, the best temperature, every paired difference with its
   SE and z), ``tasktypes.md`` (success per task type, the layout of the study's Table 8) and,
   with ``--episodes-only``, each results file's settings and episode records, gzipped
   (``*.episodes.jsonl.gz``), small enough to commit; ``--docs DIR`` copies the summaries,
   every ``compare.json`` and those episode files there (``make learn-alfworld``'s evidence).

Every step resumes: results files keep finished episodes (``--resume``), so a stopped
comparison picks up where it stopped. ``--from DIR`` first takes the episode files a ``--docs``
folder holds for the results files ``OUT`` lacks: a model whose file has every episode is then
not played again, nor needed on disk, so a comparison made in sittings on machines that do not
keep their runs goes on from its committed evidence (the start is checked against its
weights, which it must still match). ``--jobs 2`` plays the two splits at once, one process
each (a split's episodes do not depend on the other's, so the files are the same). Example::

    python scripts/alfworld_compare.py --bc runs/learn-alfworld-bc/final \\
        --rl runs/learn-alfworld-rl/final --out docs/learn-alfworld --resume
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import re
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from arlarena_baselines.arena.stats import across_seeds, paired_row
from arlarena_baselines.evaluation.results import read_records
from arlarena_baselines.evaluation.tasktypes import task_type_markdown, task_type_rows
from arlarena_baselines.trainer.checkpoint import atomic_write_gzip
from arlarena_baselines.trainer.compare import compare_checkpoints
from arlarena_baselines.trainer.config import TrainConfig, load_config

PANELS = {"id": "alfworld-compact-heldout-id", "ood": "alfworld-compact-heldout-ood"}
RL_CONFIG = "configs/recipe/alfworld-rl.yaml"
START = "BC"
"""The results file name of the start (``BC.jsonl``)."""
_NAME = re.compile(r"^[A-Za-z0-9_.\-/]+$")


def _t(value: float) -> str:
    return f"T{value:g}"


def split_config(args: argparse.Namespace, panel: str, temperature: float) -> TrainConfig:
    """The RL recipe's env and prompt with the panel's tasks as ``eval.*`` at ``temperature``
    (full softmax: no top-p, no top-k)."""
    from arlarena_envs.panels import load_panel

    spec = load_panel(panel).spec
    return load_config(args.config, [
        f"rollout.env={spec.env}", f"rollout.env_kwargs={json.dumps(spec.env_kwargs)}",
        f"eval.reset_options={json.dumps(spec.options)}", f"eval.seed={spec.seed}",
        f"eval.episodes={args.episodes or spec.count}", f"eval.temperature={temperature}",
        "eval.top_p=1.0", "eval.top_k=0", "run.tensorboard=false",
        f"run.progress={str(args.progress).lower()}", *args.set,
    ])


def compare_split(args: argparse.Namespace, split: str) -> dict[str, Any]:
    """Sweep, best temperature and the paired comparisons of one held-out split."""
    from arlarena_baselines.cli._panel import checked_panel

    panel = PANELS[split]
    config = split_config(args, panel, 1.0)
    record = checked_panel(panel, config.eval.episodes, config.rollout.env_kwargs)[1]
    folder = Path(args.out) / split
    sweep = {}
    for t in args.sweep:
        rows = compare_checkpoints(split_config(args, panel, t), [args.bc], names=[START],
                                   out=folder / _t(t), resume=args.resume)
        sweep[f"{t:g}"] = {"success": rows[0]["success"], "se": rows[0]["success_se"]}
    best = max(args.sweep, key=lambda t: (sweep[f"{t:g}"]["success"], -t))
    paired, tables = {}, {}
    names = [START, *map(file_name, args.labels)]
    for t in dict.fromkeys([*args.temperatures, best]):
        rows = compare_checkpoints(split_config(args, panel, t), [args.bc, *args.rl],
                                   names=names, out=folder / _t(t), resume=True)
        rl = {name: paired_row(row) for name, row in zip(args.labels, rows[1:], strict=True)}
        paired[f"{t:g}"] = {"start": paired_row(rows[0]), "rl": rl, "methods": across_seeds(rl)}
        files = {label: folder / _t(t) / f"{name}.jsonl"
                 for label, name in zip(["BC", *args.labels], names, strict=True)}
        tables[f"{t:g}"] = task_type_rows({name: list(read_records(path))
                                           for name, path in files.items()})
    return {"panel": record, "sweep": sweep, "best_temperature": best, "paired": paired,
            "task_types": tables}


def compare_splits(args: argparse.Namespace, splits: list[str]) -> dict[str, Any]:
    """:func:`compare_split` of each split, ``args.jobs`` of them at once in spawned processes
    (each at the config's ``run.threads``)."""
    jobs = min(args.jobs, len(splits))
    if jobs <= 1:
        return {split: compare_split(args, split) for split in splits}
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {split: pool.submit(compare_split, args, split) for split in splits}
        return {split: future.result() for split, future in futures.items()}


def file_name(label: str) -> str:
    """The results file name of a model labelled ``label`` (``GRPO/seed0``: ``GRPO-seed0``).

    >>> file_name("GRPO/seed0")
    'GRPO-seed0'
    """
    if label == START or not label or label.startswith(".") or not _NAME.match(label):
        raise ValueError(f"label {label!r} cannot name a results file: use letters, digits, "
                         f"'_', '-', '.' and '/', not {START!r}")
    return label.replace("/", "-")


def restore(out: Path, docs: Path) -> int:
    """Write each ``*.episodes.jsonl.gz`` of ``docs`` (a ``--docs`` folder) as the results file
    at the same place under ``out`` where ``out`` lacks it; return how many."""
    restored = 0
    for path in sorted(docs.rglob("*.episodes.jsonl.gz")):
        target = out / path.relative_to(docs).parent / path.name.replace(".episodes.jsonl.gz",
                                                                          ".jsonl")
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            target.write_text(handle.read(), encoding="utf-8")
        restored += 1
    return restored


def episodes_only(folder: Path) -> None:
    """Write each results file's settings and episode records beside it, gzipped (no
    timestamp: the same records give the same bytes)."""
    for path in sorted(folder.rglob("*.jsonl")):
        keep = [r for r in read_records(path) if r.get("type") in ("settings", "episode")]
        atomic_write_gzip(path.with_name(path.stem + ".episodes.jsonl.gz"),
                          "".join(json.dumps(r) + "\n" for r in keep).encode())


def copy_evidence(out: Path, docs: Path) -> None:
    """The summaries, every ``compare.json`` and the episode-only files, from ``out`` to
    ``docs`` (same layout)."""
    names = ["summary.json", "summary.md"]
    paths = [out / n for n in names] + sorted(out.rglob("compare.json"))
    paths += sorted(out.rglob("*.episodes.jsonl.gz"))
    for path in paths:
        target = docs / path.relative_to(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def markdown(summary: dict[str, Any]) -> str:
    """The sweep, the paired differences and the task-type tables of every split."""
    lines = ["# ALFWorld-Compact-v0: BC start against RL (generated by "
             "scripts/alfworld_compare.py)", ""]
    for split, s in summary["splits"].items():
        lines += [f"## {PANELS[split]} ({s['panel']['tasks']} episodes, panel hash "
                  f"{s['panel']['hash']})", "", "| start at T | " + " | ".join(s["sweep"]) + " |",
                  "|---" * (len(s["sweep"]) + 1) + "|",
                  "| success | " + " | ".join(f"{v['success']:.3f} ± {v['se']:.3f}"
                                             for v in s["sweep"].values()) + " |", "",
                  f"Best temperature of the start: {s['best_temperature']:g}.", "",
                  "| T | model | start | model's success | model − start (paired) | z |",
                  "|---|---|---|---|---|---|"]
        for t, p in s["paired"].items():
            for name, rl in p["rl"].items():
                lines.append(f"| {t} | {name} | {p['start']['success']:.3f} | "
                             f"{rl['success']:.3f} | {rl['diff']:+.3f} ± {rl['diff_se']:.3f} | "
                             f"{rl['z']:+.1f} |")
        for t, p in s["paired"].items():
            if p["methods"]:
                lines += ["", f"Across training seeds at T = {t}:", "",
                          "| method | seeds | mean difference | SD across seeds | SE across "
                          "seeds | mean paired SE |", "|---|---|---|---|---|---|"]
                lines += [f"| {m} | {g['seeds']} | {g['diff']:+.3f} | {g['seed_sd']:.3f} | "
                          f"{g['seed_se']:.3f} | {g['paired_se']:.3f} |"
                          for m, g in p["methods"].items()]
        for t, rows in s["task_types"].items():
            lines += ["", f"Success per task type at T = {t} (%):", "",
                      task_type_markdown(rows).rstrip()]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bc", required=True, help="the start (the BC checkpoint)")
    parser.add_argument("--rl", required=True, nargs="+", help="the RL checkpoints")
    parser.add_argument("--labels", default=None,
                        help="their names in the tables, comma-separated (default: RL, or "
                        "each checkpoint's run folder)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--config", default=RL_CONFIG)
    parser.add_argument("--splits", default="id,ood")
    parser.add_argument("--sweep", default="0,0.2,0.4,0.6,1.0",
                        help="the start's temperatures")
    parser.add_argument("--temperatures", default="1.0,0.4",
                        help="RL's temperatures (and the start's best)")
    parser.add_argument("--episodes", type=int, default=0,
                        help="the panels' first N tasks (0: all of them)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    parser.add_argument("--jobs", type=int, default=1,
                        help="splits played at once, one process each")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--episodes-only", action="store_true",
                        help="also write gzipped episode-only copies of the results files")
    parser.add_argument("--docs", default=None,
                        help="copy the summaries, compare.json files and episode-only files "
                        "here (implies --episodes-only)")
    parser.add_argument("--from", dest="source", default=None, metavar="DIR",
                        help="first take the episode files of DIR (a --docs folder) for the "
                        "results files OUT lacks (implies --resume)")
    args = parser.parse_args(argv)
    args.sweep = [float(t) for t in args.sweep.split(",")]
    args.temperatures = [float(t) for t in args.temperatures.split(",")]
    if args.labels:
        args.labels = args.labels.split(",")
    elif len(args.rl) == 1:
        args.labels = ["RL"]
    else:
        args.labels = [Path(path).parent.name or path for path in args.rl]
    if len(args.labels) != len(args.rl):
        parser.error(f"{len(args.labels)} labels for {len(args.rl)} RL checkpoints")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    try:
        names = [file_name(label) for label in args.labels]
    except ValueError as error:
        parser.error(str(error))
    if len(set(names)) != len(names):
        parser.error(f"two labels name one results file: {args.labels}")
    if args.source:
        if not Path(args.source).is_dir():
            parser.error(f"--from {args.source}: no such folder")
        args.resume = True
        print(f"{restore(Path(args.out), Path(args.source))} results files taken from "
              f"{args.source}")
    splits = compare_splits(args, args.splits.split(","))
    summary = {"bc": args.bc, "rl": args.rl, "env": "ARLArena/ALFWorld-Compact-v0",
               "template": "alfworld_compact (not the study's template)", "splits": splits}
    out = Path(args.out)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "summary.md").write_text(markdown(summary))
    if args.episodes_only or args.docs:
        episodes_only(out)
    if args.docs:
        copy_evidence(out, Path(args.docs))
    print((out / "summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
