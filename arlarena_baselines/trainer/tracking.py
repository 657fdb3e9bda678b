"""Where metrics go: a JSONL file always, TensorBoard and Weights & Biases when asked.

Holds :class:`MetricsLogger`, :func:`read_metrics` and :func:`rollout_metrics` (the summary
of a rollout, training's or a held-out evaluation's, under the names of
:mod:`~arlarena_baselines.algos.metric_names`). Each line of ``metrics.jsonl`` is one
logged step: ``{"phase": ..., "step": ..., <metric>: <float>, ...}``; each line of
``eval_episodes.jsonl`` is one held-out episode of an evaluation (its task, seed, outcome), so
two runs evaluated on the same tasks can be compared task by task. On resume the logger drops
the lines of steps after the checkpoint (they are about to be redone) and tells TensorBoard to
purge them, so curves never show a step twice.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.rollout import Rollout
from arlarena_baselines.rollout.samples import EpisodeResult

__all__ = ["EVAL_EPISODES_FILE", "METRICS_FILE", "MetricsLogger", "episode_record", "read_metrics",
           "rollout_metrics"]

METRICS_FILE = "metrics.jsonl"
EVAL_EPISODES_FILE = "eval_episodes.jsonl"


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """Every record of a metrics JSONL (``path`` is the file or its run directory); a torn
    last line (a crash mid-write) is skipped."""
    path = Path(path)
    if path.is_dir():
        path = path / METRICS_FILE
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def _truncate(path: Path, phase: str, first_step: int) -> None:
    """Rewrite ``path`` without ``phase`` records of step >= ``first_step`` (atomically)."""
    if not path.exists():
        return
    kept = [
        r for r in read_metrics(path) if not (r.get("phase") == phase and r["step"] >= first_step)
    ]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in kept))
    os.replace(tmp, path)


def episode_record(e: EpisodeResult) -> dict[str, Any]:
    """One held-out episode as the run's episode files hold it: its task, its env seed (the
    level), and its outcome."""
    return {"task": e.group_id, "seed": e.seed, "won": e.won, "score": e.score,
            "return": e.episode_return, "turns": e.turns, "valid_turns": e.valid_turns}


class MetricsLogger:
    """Logs ``{name: float}`` dicts per step to ``run_dir/metrics.jsonl`` (+ TB, W&B).

    Args:
        run_dir: the run directory.
        phase: ``sft`` or ``rl``; TensorBoard tags are prefixed with it.
        resume_step: on resume, the first step to be (re)done; later records are dropped.
        tensorboard: log to ``run_dir/tensorboard`` (a missing package prints how to install
            it and is otherwise ignored).
        wandb: log to W&B (``wandb_config`` is the run's config); a missing package is an error.
    """

    def __init__(
        self,
        run_dir: str | Path,
        phase: str,
        *,
        resume_step: int | None = None,
        tensorboard: bool = False,
        wandb: bool = False,
        wandb_project: str = "arlarena",
        wandb_config: Mapping[str, Any] | None = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.phase = phase
        self.path = self.run_dir / METRICS_FILE
        self.episodes_path = self.run_dir / EVAL_EPISODES_FILE
        if resume_step is not None:
            _truncate(self.path, phase, resume_step)
            _truncate(self.episodes_path, phase, resume_step)
        self._file = self.path.open("a")
        self._tb = self._open_tensorboard(resume_step) if tensorboard else None
        self._wandb = None
        if wandb:
            try:
                import wandb as wandb_module
            except ImportError as err:
                raise ImportError("W&B logging needs the wandb package: pip install wandb") from err
            self._wandb = wandb_module.init(
                project=wandb_project,
                name=f"{self.run_dir.name}-{phase}",
                config=dict(wandb_config or {}),
                resume="allow",
                dir=str(self.run_dir),
            )

    def _open_tensorboard(self, resume_step: int | None) -> Any:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            print(
                "tensorboard is not installed: metrics go to metrics.jsonl only "
                "(pip install tensorboard, or set run.tensorboard=false)",
                file=sys.stderr,
            )
            return None
        purge = resume_step if resume_step is not None else None
        return SummaryWriter(str(self.run_dir / "tensorboard" / self.phase), purge_step=purge)

    def log(self, step: int, metrics: Mapping[str, float]) -> dict[str, Any]:
        """Write one step's metrics (non-finite values are kept as JSON null)."""
        clean = {k: (float(v) if math.isfinite(float(v)) else None) for k, v in metrics.items()}
        record = {"phase": self.phase, "step": step, **clean}
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        if self._tb is not None:
            for key, value in clean.items():
                if value is not None:
                    self._tb.add_scalar(key, value, step)
            self._tb.flush()
        if self._wandb is not None:
            self._wandb.log({f"{self.phase}/{k}" if "/" not in k else k: v for k, v in clean.items()
                             if v is not None}, step=step)
        return record

    def log_episodes(self, step: int, episodes: Sequence[EpisodeResult]) -> None:
        """Write one evaluation's episodes to ``eval_episodes.jsonl``."""
        lines = [json.dumps({"phase": self.phase, "step": step, **episode_record(e)}) + "\n"
                 for e in episodes]
        with self.episodes_path.open("a") as handle:
            handle.write("".join(lines))
            handle.flush()
            os.fsync(handle.fileno())

    def close(self) -> None:
        self._file.close()
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()


def rollout_metrics(rollout: Rollout) -> dict[str, float]:
    """Success rate, valid-format ratio, score, return, turns and response length."""
    episodes, samples = rollout.episodes, rollout.samples
    n_ep, n_turns = max(len(episodes), 1), max(len(samples), 1)
    return {
        mn.EPISODES: float(len(episodes)),
        mn.SUCCESS_RATE: sum(e.won for e in episodes) / n_ep,
        mn.SCORE: sum(e.score for e in episodes) / n_ep,
        mn.RETURN: sum(e.episode_return for e in episodes) / n_ep,
        mn.TURNS: sum(e.turns for e in episodes) / n_ep,
        mn.VALID_FORMAT_RATIO: sum(s.valid for s in samples) / n_turns,
        mn.RESPONSE_LENGTH: sum(len(s.response_ids) for s in samples) / n_turns,
    }
