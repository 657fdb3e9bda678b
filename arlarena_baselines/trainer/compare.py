"""Checkpoints compared on the same held-out episodes: ``arlarena train compare``.

Holds :func:`compare_checkpoints`. Each checkpoint plays the config's held-out tasks
(``eval.*``) with the evaluation sampling; every episode samples from its own random stream,
so the checkpoints meet the same levels with the same random draws and differ only by their
own choices. Each one after the first is compared with the first task by task
(:func:`~arlarena_baselines.evaluation.paired.paired_comparison`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arlarena_baselines.evaluation.paired import paired_comparison
from arlarena_baselines.rollout import make_env_pool
from arlarena_baselines.trainer.config import TrainConfig
from arlarena_baselines.trainer.heldout import heldout_rollout
from arlarena_baselines.trainer.policy import Policy, env_factory
from arlarena_baselines.trainer.runs import TorchThreads

__all__ = ["compare_checkpoints"]


def compare_checkpoints(
    config: TrainConfig,
    models: Sequence[str],
    *,
    out: str | Path | None = None,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """Evaluate ``models`` (checkpoint paths or model names) on ``config``'s held-out tasks.

    Returns one row per model: ``model``, ``episodes``, and for ``success`` and ``score``
    the mean, its standard error, and the paired difference against the first model with its
    standard error (``*_diff``, ``*_diff_se``; 0 for the first). With ``out``, each model's
    episodes go to ``out/<i>.jsonl`` and the rows to ``out/compare.json``.
    """
    if not models:
        raise ValueError("compare needs at least one model")
    folder = Path(out) if out is not None else None
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    threads = TorchThreads(config.run.threads)
    try:
        rows = _compare(config, models, folder, progress)
    finally:
        threads.restore()
    if folder is not None:
        (folder / "compare.json").write_text(json.dumps(rows, indent=2))
    return rows


def _compare(
    config: TrainConfig, models: Sequence[str], folder: Path | None, progress: bool
) -> list[dict[str, Any]]:
    firsts: dict[str, dict[str, float]] = {}
    rows: list[dict[str, Any]] = []
    r = config.rollout
    with make_env_pool(env_factory(config), r.n_groups * r.group_size, r.env_workers) as pool:
        for i, name in enumerate(models):
            model_config = dataclasses.replace(config.model, name=name)
            policy = Policy.load(dataclasses.replace(config, model=model_config))
            try:
                rollout = heldout_rollout(policy, config, pool, progress=progress)
            finally:
                policy.close()
            row: dict[str, Any] = {"model": name, "episodes": len(rollout.episodes)}
            for metric in ("won", "score"):
                values = {e.group_id: float(getattr(e, metric)) for e in rollout.episodes}
                firsts.setdefault(metric, values)
                c = paired_comparison(firsts[metric], values)
                key = "success" if metric == "won" else metric
                row |= {key: c.mean_b, f"{key}_se": c.se_b, f"{key}_diff": c.diff,
                        f"{key}_diff_se": c.se_diff}
            rows.append(row)
            if folder is not None:
                with (folder / f"{i}.jsonl").open("w") as handle:
                    for e in rollout.episodes:
                        handle.write(json.dumps({"model": name, "task": e.group_id,
                                                 "seed": e.seed, "won": e.won,
                                                 "score": e.score, "turns": e.turns}) + "\n")
    return rows
