"""``arlarena arena``: every method from one checkpoint under one budget, and the report.

``arlarena arena --config configs/recipe/sokoban-rl.yaml --model BC --out runs/arena`` trains
every method of ``METHODS`` (or ``--methods``) with ``--seeds`` seeds, plus the stabiliser rows
of CISPO and SAPO, the high-staleness rows of the IS-clipping methods, any ``--grid`` and the
stress grid (``--stress-lr``), each run in ``OUT/<method>/<setting>/seed<k>``; with
``--final-temperatures`` every run but the stress grid's then plays ``--final-episodes``
held-out levels at each of them. Finished runs are skipped and interrupted ones resume;
``--from DIR`` first copies in the finished runs a report folder holds (an arena made in
sittings goes on from its committed report, e.g. ``docs/arena``). It ends by writing the
report, which ``arlarena arena --report OUT [--out DIR]`` rebuilds (into DIR
with the runs' small files, e.g. for ``docs/arena``). ``--alfworld SUMMARY`` adds the ALFWorld
section (the ``summary.json`` of ``make arena-alfworld``'s comparison); the report's folder
keeps a copy, so its later reports keep the section. ``--beside DIR`` adds the section across
the two blocks of a grid made from two starts (DIR: the other block's report folder, e.g.
``docs/arena-offpolicy``); the report's folder keeps its path.

The base config comes, in increasing precedence, from ``--config``, the arena's defaults
(``run.tensorboard=false``, ``run.keep_checkpoints=1``), the shortcut flags and ``--set``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arlarena_baselines.arena.plan import RunSpec
    from arlarena_baselines.trainer.config import TrainConfig

__all__ = ["register"]

_SHORTCUTS = {
    "env": "rollout.env",
    "model": "model.name",
    "steps": "rl.steps",
    "threads": "run.threads",
}
_ARENA_DEFAULTS = ["run.tensorboard=false", "run.keep_checkpoints=1"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "arena",
        help="run every method from one checkpoint under one budget; report the comparison",
        description="The study's comparison at small scale: every method of METHODS from the "
        "same checkpoint with the same config and seeds, CISPO/SAPO stabiliser rows, "
        "high-staleness rows, an optional per-method grid; then tables (markdown, CSV) and "
        "figures. With --report, only rebuild the report of a finished arena.",
    )
    p.add_argument("--report", metavar="ARENA_DIR", default=None,
                   help="write the report of the runs in ARENA_DIR (no training)")
    p.add_argument("--out", default=None,
                   help="arena folder (default runs/arena); with --report, the report's folder "
                   "(default ARENA_DIR; another folder also gets the runs' metrics)")
    p.add_argument("--alfworld", metavar="SUMMARY", default=None,
                   help="add the ALFWorld section: the summary.json of make arena-alfworld's "
                   "comparison (e.g. docs/learn-alfworld/arena/summary.json); the report's "
                   "folder keeps a copy, so later reports of that folder keep the section")
    p.add_argument("--beside", metavar="REPORT_DIR", default=None,
                   help="add the section across the two blocks of a grid made from two starts: "
                   "the other block's report folder (e.g. docs/arena-offpolicy); the report's "
                   "folder keeps its path, so later reports of that folder keep the section")
    train = p.add_argument_group("training")
    train.add_argument("--config", default=None, help="base YAML config (e.g. configs/recipe/"
                       "sokoban-rl.yaml)")
    train.add_argument("--env", help="environment (sokoban, or a full ARLArena/... id)")
    train.add_argument("--model", help="the starting checkpoint of every run")
    train.add_argument("--steps", help="training steps per run")
    train.add_argument("--threads", help="torch CPU threads per run")
    train.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                       help="override any field of the base config (repeatable)")
    train.add_argument("--methods", default=None, metavar="A,B,...",
                       help="methods to run (default: all of METHODS; none: only the stress "
                       "grid)")
    train.add_argument("--seeds", type=int, default=1,
                       help="runs per method and setting, seeds run.seed + 0, 1, ...")
    train.add_argument("--grid", action="append", default=[], metavar="METHOD:KEY=V1,V2",
                       help="sweep a Method field (clip_high) or config field (rl.lr) of a "
                       "method; repeat for more keys (their product is swept)")
    train.add_argument("--no-stabilisers", action="store_true",
                       help="skip the CISPO/SAPO stabiliser rows")
    train.add_argument("--stabiliser-kl", type=float, default=0.05,
                       help="KL coefficient of the KL stabiliser row (default 0.05)")
    train.add_argument("--stabiliser-batch", type=int, default=4,
                       help="the mini-batch stabiliser's rl.mini_batch_size, as a multiple of "
                       "the base (default 4)")
    train.add_argument("--staleness", type=int, default=4,
                       help="the staleness rows' rl.mini_batch_size is the base divided by "
                       "this (default 4; 0: no staleness rows)")
    train.add_argument("--final-temperatures", default=None, metavar="T1,T2",
                       help="after training, play every run's model and the start's on "
                       "--final-episodes held-out levels at each of these temperatures (the "
                       "report's tables then read them)")
    train.add_argument("--final-episodes", type=int, default=1024,
                       help="held-out levels of the final evaluation (default 1024)")
    stress = p.add_argument_group("stress grid (findings 1 and 2)")
    stress.add_argument("--stress-lr", default=None, metavar="LR1,LR2",
                        help="learning rates of the stress grid (turns it on)")
    stress.add_argument("--stress-mini-batches", default="1", metavar="K1,K2",
                        help="update mini-batches per rollout batch (rl.mini_batches) of the "
                        "stress grid (default 1)")
    stress.add_argument("--stress-methods", default="GRPO,GSPO,CISPO,SAPO,CISPO_SM,SAPO_SM",
                        metavar="A,B,...", help="methods of the stress grid (default: the "
                        "IS-clipping methods and the masked CISPO and SAPO)")
    stress.add_argument("--stress-seeds", type=int, default=2,
                        help="runs per method and cell (default 2)")
    stress.add_argument("--stress-set", action="append", default=[],
                        metavar="SECTION.FIELD=VALUE",
                        help="the stress runs' budget over the base config, e.g. rl.steps=8 "
                        "(repeatable)")
    train.add_argument("--from", dest="restore_from", default=None, metavar="REPORT_DIR",
                       help="first copy into --out the planned runs REPORT_DIR holds finished "
                       "(a report folder keeps its runs' small files): an arena made in "
                       "sittings goes on from its last report")
    train.add_argument("--jobs", type=int, default=1,
                       help="runs at once, each in its own process (default 1)")
    train.add_argument("--dry-run", action="store_true",
                       help="list the planned runs, their steps and state (finished, restore "
                       "from --from, resume, new), refusing a folder of other settings or "
                       "starting weights as a run would; train nothing")
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def base_config(args: argparse.Namespace):
    """The arena's base :class:`TrainConfig` (see the module docs for precedence)."""
    from arlarena_baselines.trainer.config import apply_overrides, load_config

    shortcuts = [f"{key}={getattr(args, flag)}" for flag, key in _SHORTCUTS.items()
                 if getattr(args, flag) is not None]
    config = apply_overrides(load_config(args.config), [*_ARENA_DEFAULTS, *shortcuts,
                                                        *args.set])
    if config.eval.episodes < 1:
        raise ValueError("the arena compares held-out success: eval.episodes must be >= 1")
    return config


def run(args: argparse.Namespace) -> int:
    from arlarena_baselines.arena.report import write_report
    from arlarena_baselines.arena.runner import ArenaBusyError

    try:
        if args.report is not None:
            code, paths = 0, write_report(args.report, args.out, args.alfworld, args.beside)
        else:
            code, paths = _train(args)
    except (KeyError, TypeError, ValueError, FileNotFoundError, ArenaBusyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return code


def _list(text: str | None, kind: type) -> tuple:
    """``"1,4,16"`` → ``(1, 4, 16)`` (empty for ``None``)."""
    if text is None:
        return ()
    try:
        return tuple(kind(v.strip()) for v in text.split(",") if v.strip())
    except ValueError as err:
        raise ValueError(f"{text!r} is not a comma-separated list of {kind.__name__}") from err


def stress_grid(args: argparse.Namespace):
    """The :class:`~arlarena_baselines.arena.plan.StressGrid` of the flags, or ``None``."""
    from arlarena_baselines.arena.plan import StressGrid

    if args.stress_lr is None:
        return None
    return StressGrid(methods=_list(args.stress_methods, str), lrs=_list(args.stress_lr, str),
                      mini_batches=_list(args.stress_mini_batches, int),
                      seeds=args.stress_seeds, budget=tuple(args.stress_set))


def _train(args: argparse.Namespace) -> tuple[int, list[Path]]:
    """Plan the runs and make them (or list them with ``--dry-run``); return the exit code and
    the report's files. A bad setting raises before anything runs."""
    from arlarena_baselines.algos import METHODS
    from arlarena_baselines.arena.alfworld import read_summary
    from arlarena_baselines.arena.blocks import read_block
    from arlarena_baselines.arena.plan import ArenaPlan, parse_grid, plan_runs
    from arlarena_baselines.arena.report import write_report
    from arlarena_baselines.arena.runner import run_arena

    out = args.out or "runs/arena"
    if args.alfworld is not None:  # a bad file is refused before hours of training
        read_summary(args.alfworld)
    if args.beside is not None:  # ... and so is a bad block
        read_block(args.beside)
    base = base_config(args)
    methods = args.methods.split(",") if args.methods else list(METHODS)
    methods = [] if methods == ["none"] else methods
    plan = ArenaPlan(
        methods=tuple(m.strip() for m in methods if m.strip()), seeds=args.seeds,
        stabilisers=not args.no_stabilisers, stabiliser_kl=args.stabiliser_kl,
        stabiliser_batch=args.stabiliser_batch, staleness=args.staleness,
        grid=parse_grid(args.grid), stress=stress_grid(args),
        final_temperatures=_list(args.final_temperatures, float),
        final_episodes=args.final_episodes,
    )
    runs = plan_runs(plan, base, out)
    if args.dry_run:
        _list_runs(runs, base, out, args.restore_from)
        return 0, []
    failures = run_arena(runs, base, out, jobs=args.jobs, progress=not args.no_progress,
                         restore_from=args.restore_from)
    for spec, error in failures:
        print(f"failed: {spec.label()}: {error}", file=sys.stderr)
    paths = (write_report(out, alfworld=args.alfworld, beside=args.beside)
             if len(failures) < len(runs) else [])
    return (1 if failures else 0), paths


def _list_runs(runs: list[RunSpec], base: TrainConfig, out: str,
               restore_from: str | None) -> None:
    """The dry run: each run's steps done and state (finished; restore from ``restore_from``;
    resume; new), refusing a folder of other settings (in ``out`` or ``restore_from``) as the
    run itself would."""
    from arlarena_baselines.arena.runner import (
        check_folder,
        restorable,
        run_finished,
        start_weights,
        steps_done,
        total_steps,
    )

    weights = start_weights(base)
    for spec in runs:
        config = spec.config(base, out)
        steps = total_steps(spec, config)
        check_folder(spec, config, out, weights)
        finished = run_finished(spec, out)
        restore = restore_from is not None and restorable(spec, restore_from, out)
        if restore:
            check_folder(spec, config, restore_from, weights)
        done = steps if restore else steps_done(spec, out, steps)
        state = ("finished" if finished else "restore" if restore
                 else "resume" if spec.folder(out).exists() else "new")
        print(f"{spec.label():48s} {done:4d}/{steps} steps  {state:8s}  {spec.folder(out)}")
    print(f"{len(runs)} runs")
