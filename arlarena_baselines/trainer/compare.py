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
from arlarena_baselines.rollout import EnvPool, Rollout, make_env_pool
from arlarena_baselines.trainer.config import TrainConfig
from arlarena_baselines.trainer.heldout import heldout_rollout, played_without_model
from arlarena_baselines.trainer.policy import Policy, env_factory
from arlarena_baselines.trainer.runs import TorchThreads

__all__ = ["compare_checkpoints"]


def compare_checkpoints(
    config: TrainConfig,
    models: Sequence[str],
    *,
    out: str | Path | None = None,
    names: Sequence[str] | None = None,
    progress: bool = False,
    resume: bool = False,
) -> list[dict[str, Any]]:
    """Evaluate ``models`` (checkpoint paths or model names) on ``config``'s held-out tasks.

    Returns one row per model: ``model``, ``episodes``, and for ``success`` and ``score``
    the mean, its standard error, and the paired difference against the first model with its
    standard error (``*_diff``, ``*_diff_se``; 0 for the first). With ``out``, each model's
    turns and episodes go to the results file ``out/<name>.jsonl`` (``names``, one a model;
    by default its index; what ``arlarena eval`` writes, labelled by the model) and the rows to
    ``out/compare.json``; with ``resume``, the episodes those files have finished are kept and
    not played again, and a model no longer on disk whose file finished them all is not needed
    (:func:`~.heldout.played_without_model`).
    """
    if not models:
        raise ValueError("compare needs at least one model")
    names = [str(i) for i in range(len(models))] if names is None else list(names)
    if len(names) != len(models) or len(set(names)) != len(names):
        raise ValueError(f"compare needs one distinct file name a model, got {names} for "
                         f"{len(models)} models")
    folder = Path(out) if out is not None else None
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    threads = TorchThreads(config.run.threads)
    try:
        rows = _compare(config, models, names, folder, progress, resume)
    finally:
        threads.restore()
    if folder is not None:
        (folder / "compare.json").write_text(json.dumps(rows, indent=2))
    return rows


def _compare(
    config: TrainConfig, models: Sequence[str], names: Sequence[str], folder: Path | None,
    progress: bool, resume: bool,
) -> list[dict[str, Any]]:
    firsts: dict[str, dict[str, float]] = {}
    rows: list[dict[str, Any]] = []
    r = config.rollout
    with make_env_pool(env_factory(config), r.n_groups * r.group_size, r.env_workers) as pool:
        for name, stem in zip(models, names, strict=True):
            model_config = dataclasses.replace(config, model=dataclasses.replace(config.model,
                                                                                name=name))
            results = folder / f"{stem}.jsonl" if folder is not None else None
            if results is not None and not resume:
                results.unlink(missing_ok=True)
            if results is None:
                episodes = {e.traj_id: {"won": e.won, "score": e.score}
                            for e in _play(model_config, pool, progress).episodes}
            else:  # with those of an earlier run when resumed
                if not (resume and not Path(name).exists()
                        and played_without_model(model_config, results)):
                    _play(model_config, pool, progress, results=results, resume=resume)
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


def _play(config: TrainConfig, pool: EnvPool, progress: bool, *, results: Path | None = None,
          resume: bool = False) -> Rollout:
    """``config.model`` loaded and played on the held-out tasks (into ``results``)."""
    policy = Policy.load(config)
    try:
        return heldout_rollout(policy, config, pool, progress=progress, results=results,
                               label=config.model.name, resume=resume)
    finally:
        policy.close()
