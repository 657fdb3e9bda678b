"""The policy as the trainers see it: model, tokenizer, device, precision and generation.

Holds :class:`Policy` (built by :meth:`Policy.load` from a
:class:`~arlarena_baselines.trainer.config.TrainConfig`), which bundles what every phase
needs: scoring samples (old log-probs, entropies), a responder for rollouts with given
sampling settings, the forward pass of the loss, and saving.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from arlarena_baselines.rollout import (
    GenerationBackend,
    ModelResponder,
    PackedBatch,
    SamplingParams,
    StepSample,
    make_backend,
    response_log_probs,
    score_samples,
)
from arlarena_baselines.trainer.config import TrainConfig
from arlarena_baselines.trainer.envs import env_factory
from arlarena_baselines.trainer.models import (
    autocast_dtype,
    load_policy,
    resolve_device,
    save_model,
)

__all__ = ["Policy", "env_factory"]


@dataclass
class Policy:
    """A causal LM being trained, with its generation backend.

    Attributes:
        model: the trained module (float32 master weights).
        tokenizer: its tokenizer (left padding).
        device: where the model lives.
        amp: the autocast dtype of forward passes (``None``: float32).
        backend: the generation backend (``hf`` shares ``model``; others get weight syncs).
        micro_batch_size: samples per scoring forward.
        temperature: every log-prob and entropy (old, new, reference) is of
            softmax(logits / ``temperature``), the distribution training rollouts sample from.
        chat_template_kwargs: keyword arguments of the chat template (``model.``
            ``chat_template_kwargs``).
        sampler_log_probs: take π_old from the sampler where it is exact
            (:meth:`exact_sampler`) instead of a forward pass (``rollout.sampler_log_probs``).
        share_prefix: forward passes run the prompt prefix a batch shares once
            (``rollout.prefix_caching``).
    """

    model: torch.nn.Module
    tokenizer: Any
    device: torch.device
    amp: torch.dtype | None
    backend: GenerationBackend
    micro_batch_size: int = 16
    temperature: float = 1.0
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    sampler_log_probs: bool = True
    share_prefix: bool = True

    @classmethod
    def load(cls, config: TrainConfig, *, temperature: float = 1.0) -> Policy:
        """Load ``config.model`` and start ``config.rollout.backend`` on it; log-probs at
        ``temperature`` (the training rollouts'; behaviour cloning keeps 1)."""
        from arlarena_baselines.trainer.vocab import task_vocabulary

        model, tokenizer = load_policy(config.model, lambda tok: task_vocabulary(config, tok))
        device = resolve_device(config.model.device)
        amp = autocast_dtype(config.model, device)
        backend = make_backend(
            config.rollout.backend, model, tokenizer,
            batch_size=config.rollout.gen_batch_size, autocast_dtype=amp,
            prefix_caching=config.rollout.prefix_caching,
        )
        return cls(
            model, tokenizer, device, amp, backend, config.rl.micro_batch_size, temperature,
            dict(config.model.chat_template_kwargs), config.rollout.sampler_log_probs,
            config.rollout.prefix_caching,
        )

    @property
    def pad_id(self) -> int:
        return int(self.tokenizer.pad_token_id)

    def frozen_copy(self) -> torch.nn.Module:
        """A frozen copy of the current weights (the reference policy π_ref)."""
        ref = copy.deepcopy(self.model).eval()
        ref.requires_grad_(False)
        return ref

    def exact_sampler(self, sampling: SamplingParams) -> bool:
        """Whether the sampler's own log-probs under ``sampling`` are π_old's: it samples the
        full softmax at the policy's temperature from the policy module itself (the ``hf``
        backend), in float32 (under bf16 autocast a decode step and a full forward round
        differently)."""
        return (self.sampler_log_probs and self.backend.exact_scores and self.amp is None
                and not sampling.truncated and sampling.temperature == self.temperature)

    def responder(self, sampling: SamplingParams) -> ModelResponder:
        """A rollout responder sampling from this policy with ``sampling``; its replies carry
        the sampler's log-probs where they are exact (:meth:`exact_sampler`)."""
        return ModelResponder(self.backend, self.tokenizer, sampling, self.chat_template_kwargs,
                              score=self.exact_sampler(sampling))

    def score(self, samples: list[StepSample]) -> None:
        """Fill ``old_log_probs`` and turn entropies (π_old = the policy now) of the
        ``samples`` the sampler did not score."""
        todo = [s for s in samples if len(s.old_log_probs) != len(s.response_ids)]
        if todo:
            score_samples(
                self.model,
                todo,
                self.pad_id,
                micro_batch_size=self.micro_batch_size,
                autocast_dtype=self.amp,
                temperature=self.temperature,
                share_prefix=self.share_prefix,
            )

    def log_probs(
        self, batch: PackedBatch, *, with_entropy: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Response log-probs (and entropies) of a packed batch, with gradients."""
        return response_log_probs(
            self.model, batch, with_entropy=with_entropy, autocast_dtype=self.amp,
            temperature=self.temperature, share_prefix=self.share_prefix,
        )

    def sync(self) -> None:
        """Push the current weights to the generation backend."""
        self.backend.sync_weights(self.model)

    def save(self, path: str | Path) -> Path:
        """Save the model and tokenizer as a Hugging Face folder."""
        return save_model(self.model, self.tokenizer, path)

    def close(self) -> None:
        self.backend.close()
