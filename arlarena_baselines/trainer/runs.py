"""What every training phase does before its first step: the run folder, seeds, threads.

Holds :func:`prepare_run_dir`, :func:`seed_everything` and :class:`TorchThreads`.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import torch
import yaml

from arlarena_baselines.trainer.config import TrainConfig, config_to_dict

__all__ = ["TorchThreads", "prepare_run_dir", "seed_everything"]


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global RNGs."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def prepare_run_dir(config: TrainConfig, phase: str, resume: bool) -> Path:
    """Create the run folder and write ``<phase>_config.yaml``; refuse to reuse a folder that
    already holds a run of ``phase`` unless resuming."""
    run_dir = Path(config.run.out)
    started = (run_dir / "checkpoints").exists() or (run_dir / f"{phase}_config.yaml").exists()
    if started and not resume:
        raise FileExistsError(
            f"{run_dir} already holds a {phase} run: pass --resume to continue it, "
            "or choose another --out"
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / f"{phase}_config.yaml").write_text(
        yaml.safe_dump(config_to_dict(config), sort_keys=False)
    )
    return run_dir


class TorchThreads:
    """Set torch's CPU thread count for a run (``0``: leave it) and restore it on
    :meth:`restore`, so a run inside a larger process leaves no trace."""

    def __init__(self, threads: int) -> None:
        self.previous = torch.get_num_threads()
        if threads > 0:
            torch.set_num_threads(threads)

    def restore(self) -> None:
        torch.set_num_threads(self.previous)
