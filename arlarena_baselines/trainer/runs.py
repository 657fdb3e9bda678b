"""What every training phase does before its first step: the run folder, seeds, threads.

Holds :func:`prepare_run_dir`, :func:`seed_everything`, :func:`auto_threads` (the rule behind
``run.threads=0``) and :class:`TorchThreads`.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import torch
import yaml

from arlarena_baselines.trainer.config import TrainConfig, config_to_dict

__all__ = ["TorchThreads", "auto_threads", "config_file", "prepare_run_dir", "seed_everything"]


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global RNGs."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def config_file(run_dir: str | Path, phase: str) -> Path:
    """Where a run of ``phase`` saves its config: ``<run_dir>/<phase>_config.yaml``."""
    return Path(run_dir) / f"{phase}_config.yaml"


def prepare_run_dir(config: TrainConfig, phase: str, resume: bool) -> Path:
    """Create the run folder and write ``<phase>_config.yaml``; refuse to reuse a folder that
    already holds a run of ``phase`` unless resuming."""
    run_dir = Path(config.run.out)
    started = (run_dir / "checkpoints").exists() or config_file(run_dir, phase).exists()
    if started and not resume:
        raise FileExistsError(
            f"{run_dir} already holds a {phase} run: pass --resume to continue it, "
            "or choose another --out"
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    config_file(run_dir, phase).write_text(
        yaml.safe_dump(config_to_dict(config), sort_keys=False)
    )
    return run_dir


def auto_threads() -> int:
    """torch CPU threads for a run that does not set them: half the cores this process may
    use, at least 1 and at most torch's own default. A rule of the machine alone, not of its
    momentary load, so a run, its resume and its rerun use the same count.

    Measured on a shared 2-core machine (``python bench/trainer.py``; docs/agents.md, "Agents and
    evaluation", **Threads**): a thread more than the cores left free makes decoding several
    times slower (torch's threads spin and wait for each other when another process holds a
    core); the other half is left to env workers, the vLLM engine and the system.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min((cores or 1) // 2, torch.get_num_threads()))


class TorchThreads:
    """Set torch's CPU thread count for a run (``0``: :func:`auto_threads`) and restore it on
    :meth:`restore`, so a run inside a larger process leaves no trace."""

    def __init__(self, threads: int) -> None:
        self.previous = torch.get_num_threads()
        self.threads = threads if threads > 0 else auto_threads()
        torch.set_num_threads(self.threads)

    def restore(self) -> None:
        torch.set_num_threads(self.previous)
