"""Checkpoints compared on the same held-out episodes: ``arlarena train compare``.

Holds :func:`compare_checkpoints`. Each checkpoint plays the config's held-out tasks
(``eval.*``) with the evaluation sampling; every episode samples from its own random stream,
so the checkpoints meet the same levels with the same random draws and differ only by their
own choices. Each one after the first is compared with the first task by task
(:func:`~arlarena_baselines.evaluation.paired.paired_comparison`). Each checkpoint's episodes
go to a results file that ``arlarena report`` and ``arlarena analyze`` read, and a stopped
comparison resumes from them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arlarena_baselines.evaluation.paired import paired_comparison
from arlarena_baselines.evaluation.results import read_records
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
    resume: bool = False,
) -> list[dict[str, Any]]:
    """Evaluate ``models`` (checkpoint paths or model names) on ``config``'s held-out tasks.

    Returns one row per model: ``model``, ``episodes``, and for ``success`` and ``score``
    the mean, its standard error, and the paired difference against the first model with its
    standard error (``*_diff``, ``*_diff_se``; 0 for the first). With ``out``, each model's
    turns and episodes go to the results file ``out/<i>.jsonl`` (what ``arlarena eval``
    writes, labelled by the model) and the rows to ``out/compare.json``; with ``resume``, the
    episodes those files have finished are kept and not played again.
    """
    if not models:
        raise ValueError("compare needs at least one model")
    folder = Path(out) if out is not None else None
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    threads = TorchThreads(config.run.threads)
    try:
        rows = _compare(config, models, folder, progress, resume)
    finally:
        threads.restore()
    if folder is not None:
        (folder / "compare.json").write_text(json.dumps(rows, indent=2))
    return rows


def _compare(
    config: TrainConfig, models: Sequence[str], folder: Path | None, progress: bool,
    resume: bool,
) -> list[dict[str, Any]]:
    firsts: dict[str, dict[str, float]] = {}
    rows: list[dict[str, Any]] = []
    r = config.rollout
    with make_env_pool(env_factory(config), r.n_groups * r.group_size, r.env_workers) as pool:
        for i, name in enumerate(models):
            model_config = dataclasses.replace(config, model=dataclasses.replace(config.model,
                                                                                name=name))
            results = folder / f"{i}.jsonl" if folder is not None else None
            if results is not None and not resume:
                results.unlink(missing_ok=True)
            policy = Policy.load(model_config)
            try:
                rollout = heldout_rollout(policy, model_config, pool, progress=progress,
                                          results=results, label=name, resume=resume)
            finally:
                policy.close()
            if results is None:
                episodes = {e.traj_id: {"won": e.won, "score": e.score} for e in rollout.episodes}
            else:  # with those of an earlier run when resumed
                episodes = {e["episode_id"]: e for e in read_records(results)
                            if e.get("type") == "episode" and not e.get("error")}
            row: dict[str, Any] = {"model": name, "episodes": len(episodes)}
            for metric in ("won", "score"):
                values = {k: float(e[metric]) for k, e in episodes.items()}
                firsts.setdefault(metric, values)
                c = paired_comparison(firsts[metric], values)
                key = "success" if metric == "won" else metric
                row |= {key: c.mean_b, f"{key}_se": c.se_b, f"{key}_diff": c.diff,
                        f"{key}_diff_se": c.se_diff}
            rows.append(row)
    return rows
