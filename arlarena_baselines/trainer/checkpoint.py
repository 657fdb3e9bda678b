"""Resumable checkpoints, written atomically: a crash never leaves a half-written one.

Holds :func:`save_checkpoint`, :func:`latest_checkpoint`, :func:`load_checkpoint`,
:func:`rng_state` / :func:`set_rng_state`, and :func:`atomic_write_text`.

A checkpoint is a folder ``run_dir/checkpoints/step_<N>`` with ``model/`` (a Hugging Face
folder: evaluable with ``arlarena eval --agent hf --model …``) and ``state.pt`` (optimizer,
RNG states, step and the trainer's own counters). It is built under a temporary name and
renamed into place; then ``checkpoints/latest`` (a one-line file, replaced atomically) names
it. Older checkpoints beyond ``keep`` are removed afterwards.
"""

from __future__ import annotations

import gzip
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from arlarena_baselines.trainer.models import save_model

__all__ = [
    "atomic_write_bytes",
    "atomic_write_gzip",
    "atomic_write_text",
    "latest_checkpoint",
    "load_checkpoint",
    "rng_state",
    "save_checkpoint",
    "set_rng_state",
]


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file, fsync and rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def atomic_write_gzip(path: Path, data: bytes) -> None:
    """Write ``data`` gzip-compressed to ``path`` atomically, without a timestamp in the header,
    so that the same data always give the same bytes (committed evidence rebuilds exactly)."""
    atomic_write_bytes(path, gzip.compress(data, mtime=0))


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def rng_state() -> dict[str, Any]:
    """The states of Python's, NumPy's and torch's global RNGs (CUDA's too, if present)."""
    state = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` captured."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _fsync_tree(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            with path.open("rb") as handle:
                os.fsync(handle.fileno())


def save_checkpoint(
    run_dir: str | Path,
    step: int,
    model: torch.nn.Module,
    tokenizer: Any,
    optimizer: torch.optim.Optimizer,
    state: dict[str, Any],
    keep: int = 2,
) -> Path:
    """Write the checkpoint of ``step`` (the number of finished steps); return its folder."""
    folder = Path(run_dir) / "checkpoints"
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"step_{step:06d}"
    tmp = Path(tempfile.mkdtemp(dir=folder, prefix=f".step_{step:06d}-"))
    save_model(model, tokenizer, tmp / "model")
    payload = {"step": step, "optimizer": optimizer.state_dict(), "rng": rng_state(), **state}
    torch.save(payload, tmp / "state.pt")
    _fsync_tree(tmp)
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    atomic_write_text(folder / "latest", final.name + "\n")
    done = sorted(p for p in folder.glob("step_*") if p.is_dir())
    for old in done[: max(len(done) - keep, 0)]:
        if old != final:
            shutil.rmtree(old, ignore_errors=True)
    for stale in folder.glob(".step_*"):
        shutil.rmtree(stale, ignore_errors=True)
    return final


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The folder ``checkpoints/latest`` names, or ``None`` when there is none yet."""
    pointer = Path(run_dir) / "checkpoints" / "latest"
    if not pointer.is_file():
        return None
    folder = pointer.parent / pointer.read_text().strip()
    return folder if (folder / "state.pt").is_file() else None


def load_checkpoint(
    folder: str | Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer
) -> dict[str, Any]:
    """Load weights, optimizer and RNG states from ``folder``; return the saved state dict."""
    from transformers import AutoModelForCausalLM

    folder = Path(folder)
    saved = AutoModelForCausalLM.from_pretrained(folder / "model", dtype=torch.float32)
    model.load_state_dict(saved.state_dict())
    state = torch.load(folder / "state.pt", map_location="cpu", weights_only=False)
    optimizer.load_state_dict(state["optimizer"])
    set_rng_state(state["rng"])
    return state
