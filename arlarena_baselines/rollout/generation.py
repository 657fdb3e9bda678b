"""Generation backends: batches of prompt token ids in, sampled response token ids out.

Holds :class:`SamplingParams` (from :mod:`wrappers.agents.sampling`; the study's train and eval
settings as :data:`TRAIN_SAMPLING` and :data:`EVAL_SAMPLING`), the :class:`GenerationBackend`
interface, :class:`HFBackend` (the KV-cache decode loop of
:func:`~wrappers.agents.sampling.generate_batched` on the policy module itself, so it never
needs a weight sync) and the registry :data:`BACKENDS` behind :func:`make_backend` (``hf``; an
engine plugs in with :func:`register_backend`: it samples token ids and takes the policy's
weights in :meth:`GenerationBackend.sync_weights` after each update, as
:mod:`~arlarena_baselines.rollout.vllm_backend` does).

Every backend samples exactly what :class:`SamplingParams` says (no library or model defaults)
and draws each prompt's tokens from that prompt's own seed, so a sequence does not depend on
what else shares its batch. A backend that samples from the policy module itself
(:attr:`GenerationBackend.exact_scores`: ``hf``) also records each token's log-prob and
entropy as it samples (:class:`~wrappers.agents.sampling.TokenScores`), which is what a
forward pass of the policy would give; for the others the rollout scores the tokens with the
policy's own forward pass, so every backend yields the same training data.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import torch

from wrappers.agents.sampling import (
    PrefixCache,
    SamplingParams,
    TokenScores,
    eos_token_ids,
    generate_batched,
)

__all__ = [
    "BACKENDS",
    "EVAL_SAMPLING",
    "TRAIN_SAMPLING",
    "GenerationBackend",
    "HFBackend",
    "SamplingParams",
    "TokenScores",
    "eos_token_ids",
    "make_backend",
    "register_backend",
]


TRAIN_SAMPLING = SamplingParams(temperature=1.0)
"""The study's rollout sampling: T = 1.0, no top-p / top-k (the policy's own distribution)."""
EVAL_SAMPLING = SamplingParams(temperature=0.6, top_p=0.95, top_k=20)
"""The study's evaluation sampling: T = 0.6, top-p 0.95, top-k 20."""


class GenerationBackend(ABC):
    """Samples responses for a batch of tokenised prompts."""

    name = "backend"
    exact_scores = False
    """Whether :meth:`generate` fills ``scores`` with what the policy's forward pass gives
    (the same weights, in the same module)."""

    @abstractmethod
    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: SamplingParams,
        seeds: Sequence[int],
        scores: TokenScores | None = None,
    ) -> list[list[int]]:
        """One response per prompt: token ids up to and including the end-of-sequence token
        (absent when the budget ran out). ``seeds[i]`` seeds prompt ``i``'s random stream. A
        backend with :attr:`exact_scores` records each token's log-prob and entropy in
        ``scores``; others leave it empty."""

    def sync_weights(self, model: torch.nn.Module) -> None:
        """Push the policy's current weights to the engine (after each update)."""

    def close(self) -> None:
        """Release the engine."""


class HFBackend(GenerationBackend):
    """The policy module itself decodes, in chunks of ``batch_size`` prompts.

    Prompts are sorted by length before chunking (less padding); each row samples from its own
    seed (:func:`~wrappers.agents.sampling.generate_tokens`), so chunking changes nothing but
    speed, and the global RNG is neither read nor disturbed. With ``prefix_caching`` the KV of
    the prompt prefix a chunk shares (the env's preamble, a turn's earlier history) is computed
    once and kept for later chunks while the weights stay as they are (any in-place change of
    a parameter, as an optimizer step or ``load_state_dict`` makes, drops it).
    """

    name = "hf"
    exact_scores = True

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Any,
        batch_size: int = 64,
        autocast_dtype: torch.dtype | None = None,
        prefix_caching: bool = True,
    ) -> None:
        self.model = model
        self.pad_id = int(tokenizer.pad_token_id)
        self.eos_ids = eos_token_ids(model, tokenizer)
        self.batch_size = batch_size
        self.autocast_dtype = autocast_dtype
        self.prefix_cache = PrefixCache() if prefix_caching else None
        self._weights = self._weights_version()

    def _weights_version(self) -> tuple[tuple[int, int], ...]:
        """Which parameters the model holds and how often each was changed in place."""
        return tuple((id(p), p._version) for p in self.model.parameters())

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: SamplingParams,
        seeds: Sequence[int],
        scores: TokenScores | None = None,
    ) -> list[list[int]]:
        if self.prefix_cache is not None and (version := self._weights_version()) != self._weights:
            self.prefix_cache, self._weights = PrefixCache(), version
        return generate_batched(
            self.model, prompts, sampling, seeds, batch_size=self.batch_size,
            pad_id=self.pad_id, eos_ids=self.eos_ids, autocast_dtype=self.autocast_dtype,
            prefix_cache=self.prefix_cache, scores=scores,
        )


BackendFactory = Callable[..., GenerationBackend]
BACKENDS: dict[str, BackendFactory] = {"hf": HFBackend}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Add a backend factory ``factory(model, tokenizer, **options)`` under ``name``; the
    trainer's options are ``batch_size``, ``autocast_dtype`` and ``prefix_caching``."""
    BACKENDS[name] = factory


def make_backend(name: str, model: torch.nn.Module, tokenizer: Any, **options: Any):
    """Build the backend registered as ``name`` (built in: ``hf``, ``vllm``)."""
    if name not in BACKENDS:
        raise ValueError(f"unknown generation backend {name!r}; known: {', '.join(BACKENDS)}")
    return BACKENDS[name](model, tokenizer, **options)
