"""What identifies a model in a results file: the content hash of its weights, not its path.

Holds :func:`module_digest` (a loaded torch module: every tensor of its state dict, by name,
dtype, shape and bytes) and :func:`files_digest` (a checkpoint folder's weight files). Two
checkpoints written to the same path (``RUN/final`` before and after a resumed run trained on)
hash apart, so their results never merge as one model's.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import torch

__all__ = ["WEIGHT_SUFFIXES", "files_digest", "module_digest"]

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt")
"""The files of a checkpoint folder that hold weights."""

_DIGITS = 16


def module_digest(module: Any) -> str:
    """The SHA-256 (first 16 hex digits) of ``module``'s state dict: names, dtypes, shapes and
    the tensors' bytes (moved to the CPU one at a time)."""
    digest = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        flat = tensor.detach().to("cpu").contiguous().reshape(-1)
        digest.update(f"{name}|{flat.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:_DIGITS]


def files_digest(folder: str | Path) -> str | None:
    """The SHA-256 (first 16 hex digits) of the weight files of checkpoint ``folder`` (their
    names and bytes), or ``None`` when it is no folder with weight files (a hub id)."""
    root = Path(folder)
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in WEIGHT_SUFFIXES) \
        if root.is_dir() else []
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.relative_to(root).as_posix()}|".encode())
        with path.open("rb") as handle:
            for block in iter(lambda h=handle: h.read(1 << 22), b""):
                digest.update(block)
    return digest.hexdigest()[:_DIGITS]
