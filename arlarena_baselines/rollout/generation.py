"""Generation backends: batches of prompt token ids in, sampled response token ids out.

Holds :class:`SamplingParams` (the study's train and eval settings as :data:`TRAIN_SAMPLING`
and :data:`EVAL_SAMPLING`), the :class:`GenerationBackend` interface, :class:`HFBackend`
(transformers ``generate`` on the policy module itself, so it never needs a weight sync) and
the registry :data:`BACKENDS` behind :func:`make_backend` (``hf``; an engine plugs in with
:func:`register_backend`: it samples token ids and takes the policy's weights in
:meth:`GenerationBackend.sync_weights` after each update, as
:mod:`~arlarena_baselines.rollout.vllm_backend` does).

Backends return token ids only: the rollout scores them with the policy's own forward pass
(log-probs and entropies), so every backend yields the same training data.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from arlarena_baselines.rollout.forward import autocast

__all__ = [
    "BACKENDS",
    "EVAL_SAMPLING",
    "TRAIN_SAMPLING",
    "GenerationBackend",
    "HFBackend",
    "SamplingParams",
    "eos_token_ids",
    "make_backend",
    "register_backend",
]


@dataclass(frozen=True)
class SamplingParams:
    """How responses are sampled.

    Attributes:
        temperature: 0 decodes greedily.
        top_p: nucleus mass (1.0 = off).
        top_k: keep the k most likely tokens (0 = off).
        max_new_tokens: response budget in tokens.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 256

    def __post_init__(self) -> None:
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.top_k < 0:
            raise ValueError(f"invalid sampling settings {self}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")


TRAIN_SAMPLING = SamplingParams(temperature=1.0)
"""The study's rollout sampling: T = 1.0, no top-p / top-k (the policy's own distribution)."""
EVAL_SAMPLING = SamplingParams(temperature=0.6, top_p=0.95, top_k=20)
"""The study's evaluation sampling: T = 0.6, top-p 0.95, top-k 20."""


class GenerationBackend(ABC):
    """Samples responses for a batch of tokenised prompts."""

    name = "backend"

    @abstractmethod
    def generate(
        self, prompts: Sequence[Sequence[int]], sampling: SamplingParams, seed: int
    ) -> list[list[int]]:
        """One response per prompt: token ids up to and including the end-of-sequence token
        (absent when the budget ran out). ``seed`` makes the call reproducible."""

    def sync_weights(self, model: torch.nn.Module) -> None:
        """Push the policy's current weights to the engine (after each update)."""

    def close(self) -> None:
        """Release the engine."""


class HFBackend(GenerationBackend):
    """transformers ``generate`` on the policy module, in chunks of ``batch_size`` prompts.

    Prompts are sorted by length before chunking (less padding) and left-padded; each call
    seeds a forked torch RNG with ``seed``, so generation neither depends on nor disturbs
    the global RNG stream.
    """

    name = "hf"

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Any,
        batch_size: int = 64,
        autocast_dtype: torch.dtype | None = None,
    ) -> None:
        self.model = model
        self.pad_id = int(tokenizer.pad_token_id)
        self.eos_ids = eos_token_ids(model, tokenizer)
        self.batch_size = batch_size
        self.autocast_dtype = autocast_dtype

    def generate(
        self, prompts: Sequence[Sequence[int]], sampling: SamplingParams, seed: int
    ) -> list[list[int]]:
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        out: list[list[int]] = [[] for _ in prompts]
        for chunk_index, start in enumerate(range(0, len(order), self.batch_size)):
            chunk = order[start : start + self.batch_size]
            texts = self._generate_chunk([prompts[i] for i in chunk], sampling, seed + chunk_index)
            for i, ids in zip(chunk, texts, strict=True):
                out[i] = ids
        return out

    def _generate_chunk(
        self, prompts: list[Sequence[int]], sampling: SamplingParams, seed: int
    ) -> list[list[int]]:
        from transformers import GenerationConfig

        device = next(self.model.parameters()).device
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            ids[row, width - len(prompt) :] = torch.as_tensor(list(prompt), dtype=torch.long)
            mask[row, width - len(prompt) :] = 1
        greedy = sampling.temperature == 0
        config = GenerationConfig(
            max_new_tokens=sampling.max_new_tokens,
            do_sample=not greedy,
            temperature=None if greedy else sampling.temperature,
            top_p=None if greedy or sampling.top_p >= 1.0 else sampling.top_p,
            top_k=None if greedy or sampling.top_k == 0 else sampling.top_k,
            pad_token_id=self.pad_id,
            eos_token_id=self.eos_ids,
        )
        was_training = self.model.training
        self.model.eval()
        devices = [device] if device.type == "cuda" else []
        try:
            with (
                torch.random.fork_rng(devices=devices),
                torch.no_grad(),
                autocast(device, self.autocast_dtype),
            ):
                torch.manual_seed(seed)
                out = self.model.generate(
                    input_ids=ids.to(device), attention_mask=mask.to(device),
                    generation_config=config,
                )
        finally:
            self.model.train(was_training)
        return [_cut(row.tolist(), self.eos_ids) for row in out[:, width:].cpu()]


def eos_token_ids(model: torch.nn.Module, tokenizer: Any) -> list[int]:
    """The tokens that end a response: the tokenizer's and the generation config's EOS."""
    ids = {int(tokenizer.eos_token_id)}
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(int(i) for i in configured)
    return sorted(ids)


def _cut(ids: list[int], eos_ids: Sequence[int]) -> list[int]:
    """The response up to and including its first end-of-sequence token."""
    for position, token in enumerate(ids):
        if token in eos_ids:
            return ids[: position + 1]
    return ids


BackendFactory = Callable[..., GenerationBackend]
BACKENDS: dict[str, BackendFactory] = {"hf": HFBackend}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Add a backend factory ``factory(model, tokenizer, **options)`` under ``name``; the
    trainer's options are ``batch_size`` and ``autocast_dtype``."""
    BACKENDS[name] = factory


def make_backend(name: str, model: torch.nn.Module, tokenizer: Any, **options: Any):
    """Build the backend registered as ``name`` (built in: ``hf``, ``vllm``)."""
    if name not in BACKENDS:
        raise ValueError(f"unknown generation backend {name!r}; known: {', '.join(BACKENDS)}")
    return BACKENDS[name](model, tokenizer, **options)
