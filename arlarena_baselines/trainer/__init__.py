"""The local trainer: behaviour cloning and RL with any method of ``METHODS``, on one process.

- :mod:`.config`: one documented dataclass per phase (:class:`TrainConfig` and its sections),
  YAML loading and ``section.field=value`` overrides, the per-method config files;
- :mod:`.models`: the embedded SmolLM2, the tiny random Llama, any Hugging Face causal LM;
- :mod:`.policy`: :class:`Policy` (model, tokenizer, precision, generation backend);
- :mod:`.envs`: the rollouts' wrapper stack and the held-out tasks as an evaluation;
- :mod:`.sft`: demonstrations and :func:`train_sft`;
- :mod:`.rl`: :class:`RLTrainer` and :func:`train_rl` (the study's training step);
- :mod:`.heldout`: periodic evaluation on held-out seeds;
- :mod:`.checkpoint`, :mod:`.tracking`, :mod:`.runs`: atomic checkpoints and resume, metrics
  (JSONL, TensorBoard, W&B; their names live in :mod:`~arlarena_baselines.algos.metric_names`),
  run folders, seeds and threads;
- :mod:`.plots`: training curves and the diagnostics panel.
"""


from __future__ import annotations

import importlib
from typing import Any

from arlarena_baselines.trainer.config import TrainConfig, load_config

__all__ = ["RLTrainer", "SFTTrainer", "TrainConfig", "load_config", "train_rl", "train_sft"]

# The trainers need torch; importing them lazily keeps the config (and the CLI's parser)
# usable, and fast, in an install without the ``train`` extra.
_LAZY = {"RLTrainer": "rl", "train_rl": "rl", "SFTTrainer": "sft", "train_sft": "sft"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
