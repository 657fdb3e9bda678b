"""``arlarena train``: behaviour cloning (``sft``), RL (``rl``), checkpoints compared on the same
held-out episodes (``compare``) and the per-method configs.

Configuration comes, in increasing precedence, from the dataclass defaults, ``--config FILE``
(YAML sections ``model``, ``rollout``, ``eval``, ``sft``, ``rl``, ``run``), the shortcut
flags (``--env``, ``--method``, ``--model``, ...), the grouped flags (``--rl.lr 1e-6``,
``--rollout.n_groups 8``, one per config field) and ``--set section.field=value``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

__all__ = ["build_config", "register"]

# Shortcut flag -> (dest, config key, help).
_SHORTCUTS: dict[str, tuple[str, str]] = {
    "--env": ("rollout.env", "environment (sokoban, or a full ARLArena/... id)"),
    "--model": ("model.name", "smollm2 (embedded), tiny, or a Hugging Face path / checkpoint"),
    "--out": ("run.out", "run directory (default runs/<phase>-<env>-<method or agent>)"),
    "--seed": ("run.seed", "seed of the run"),
    "--env-workers": ("rollout.env_workers",
                      "env worker processes (0 = in-process), or ray / ray:N (Ray actors)"),
    "--threads": ("run.threads", "torch CPU threads (0 = torch's default)"),
}
_RL_SHORTCUTS = {
    "--method": ("rl.method", "method name from METHODS (e.g. SAMPO, GRPO, GiGPO)"),
    "--steps": ("rl.steps", "training steps"),
}
_SFT_SHORTCUTS = {
    "--agent": ("sft.agent", "agent whose trajectories are cloned (expert, random, ...)"),
    "--data": ("sft.data", "clone this JSONL of turns and episodes instead of collecting"),
    "--episodes": ("sft.episodes", "episodes to collect"),
    "--epochs": ("sft.epochs", "passes over the demonstrations"),
}


def _add_config_flags(
    parser: argparse.ArgumentParser,
    shortcuts: dict[str, tuple[str, str]],
    skip: str,
    *,
    resumable: bool = True,
) -> None:
    from arlarena_baselines.trainer.config import iter_fields

    parser.add_argument("--config", default=None, help="YAML config file")
    if resumable:
        parser.add_argument("--resume", action="store_true",
                            help="continue the run in --out from its latest checkpoint")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="override any config field (repeatable)")
    for flag, (key, text) in shortcuts.items():
        parser.add_argument(flag, dest=f"short:{key}", default=None, help=text,
                            metavar=key.split(".")[-1].upper())
    groups: dict[str, argparse._ArgumentGroup] = {}
    for section, field, default in iter_fields():
        if section == skip:
            continue
        if section not in groups:
            groups[section] = parser.add_argument_group(f"{section} settings")
        shown = default if not isinstance(default, (dict, list, tuple)) else repr(default)
        groups[section].add_argument(
            f"--{section}.{field.name}", dest=f"field:{section}.{field.name}",
            default=argparse.SUPPRESS, metavar="VALUE", help=f"default: {shown}",
        )


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train",
        help="behaviour cloning and RL of an LLM agent",
        description="Train a policy on an ARLArena env: `sft` clones an agent's good "
        "trajectories, `rl` runs any method of METHODS, `write-configs` writes "
        "configs/rl/<METHOD>.yaml and configs/rl/webshop/<METHOD>.yaml.",
    )
    sub = p.add_subparsers(dest="phase", required=True, metavar="PHASE")
    rl = sub.add_parser("rl", help="RL with a method of METHODS",
                        description="RL: rollouts, the method's advantage / clipping / "
                        "aggregation / filter, k3 KL to the starting policy, checkpoints.")
    _add_config_flags(rl, {**_SHORTCUTS, **_RL_SHORTCUTS}, skip="sft")
    rl.set_defaults(func=run_rl)
    sft = sub.add_parser("sft", help="behaviour cloning of an agent's trajectories",
                         description="Collect an agent's trajectories (or read --data), keep "
                         "episodes scoring >= sft.min_score, fine-tune on their turns.")
    _add_config_flags(sft, {**_SHORTCUTS, **_SFT_SHORTCUTS}, skip="rl")
    sft.set_defaults(func=run_sft)
    compare = sub.add_parser(
        "compare", help="evaluate checkpoints on the same held-out episodes",
        description="Play each checkpoint on the config's held-out tasks (eval.*) with the "
        "evaluation sampling, every episode from its own random stream, and print success "
        "and score with standard errors and each checkpoint's paired difference against the "
        "first.",
    )
    compare.add_argument("models", nargs="+", metavar="MODEL",
                         help="checkpoints (RUN/final) or model names; the first is the baseline")
    shortcuts = {k: v for k, v in _SHORTCUTS.items() if k != "--model"}
    _add_config_flags(compare, shortcuts, skip="sft", resumable=False)
    compare.set_defaults(func=run_compare)
    write = sub.add_parser("write-configs",
                           help="write configs/rl/[webshop/]<METHOD>.yaml for METHODS")
    write.add_argument("--dir", default="configs/rl", help="target folder")
    write.set_defaults(func=run_write_configs)


def build_config(args: argparse.Namespace, phase: str):
    """The :class:`TrainConfig` of parsed ``args`` (see the module docs for precedence)."""
    from arlarena_baselines.trainer.config import RunConfig, apply_overrides, load_config

    options: dict[str, Any] = vars(args)
    config = load_config(args.config)
    shortcuts = [f"{k[6:]}={v}" for k, v in options.items() if k.startswith("short:") and v
                 is not None]
    fields = [f"{k[6:]}={v}" for k, v in options.items() if k.startswith("field:")]
    config = apply_overrides(config, [*shortcuts, *fields, *args.set])
    if config.run.out == RunConfig().out:
        env = config.rollout.env.split("/")[-1].lower()
        who = {"rl": config.rl.method, "sft": config.sft.agent}.get(phase, "models")
        run = dataclasses.replace(config.run, out=f"runs/{phase}-{env}-{who}")
        config = dataclasses.replace(config, run=run)
    return config


def _report(records: list[dict[str, Any]], run_dir: str) -> None:
    evals = [r for r in records if r.get("eval/success_rate") is not None]
    if evals:
        first, last = evals[0], evals[-1]
        print(f"held-out success: {first['eval/success_rate']:.3f} (step {first['step']}) -> "
              f"{last['eval/success_rate']:.3f} (step {last['step']}); valid format "
              f"{last['eval/valid_format_ratio']:.3f}")
    print(f"model: {Path(run_dir) / 'final'}; metrics: {Path(run_dir) / 'metrics.jsonl'}; "
          f"plots: arlarena plot {run_dir}")


def run_rl(args: argparse.Namespace) -> int:
    from arlarena_baselines.trainer.rl import train_rl

    config = build_config(args, "rl")
    try:
        records = train_rl(config, resume=args.resume)
    except (FileExistsError, ValueError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    _report(records, config.run.out)
    return 0


def run_sft(args: argparse.Namespace) -> int:
    from arlarena_baselines.trainer.sft import train_sft

    config = build_config(args, "sft")
    try:
        records = train_sft(config, resume=args.resume)
    except (FileExistsError, ValueError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    _report(records, config.run.out)
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from arlarena_baselines.trainer.compare import compare_checkpoints

    config = build_config(args, "compare")
    try:
        rows = compare_checkpoints(config, args.models, out=config.run.out,
                                   progress=config.run.progress)
    except (ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{rows[0]['episodes']} held-out episodes ({config.rollout.env}, eval.seed "
          f"{config.eval.seed}); differences are paired against {rows[0]['model']}")
    print("| model | success | score | success vs first | z |")
    print("|---|---|---|---|---|")
    for row in rows:
        z = row["success_diff"] / row["success_diff_se"] if row["success_diff_se"] else 0.0
        print(f"| {row['model']} | {row['success']:.3f} ± {row['success_se']:.3f} | "
              f"{row['score']:.3f} ± {row['score_se']:.3f} | {row['success_diff']:+.3f} ± "
              f"{row['success_diff_se']:.3f} | {z:+.1f} |")
    print(f"episodes and rows: {config.run.out}")
    return 0


def run_write_configs(args: argparse.Namespace) -> int:
    from arlarena_baselines.algos import METHODS
    from arlarena_baselines.trainer.config import method_config_yaml

    for env in (None, "webshop"):
        folder = Path(args.dir) / (env or "")
        folder.mkdir(parents=True, exist_ok=True)
        for name in METHODS:
            (folder / f"{name}.yaml").write_text(method_config_yaml(name, env))
        print(f"wrote {len(METHODS)} configs to {folder}")
    return 0
