"""What every local-model agent shares: chat formatting, exact sampling, seeds, usage.

Holds :class:`LocalModelAgent`, the base of the ``hf`` (:class:`~wrappers.agents.hf.HFAgent`)
and ``vllm`` (:class:`~wrappers.agents.vllm_agent.VLLMAgent`) agents. A subclass only turns
token-id prompts into token-id responses (:meth:`LocalModelAgent.generate`); the prompt format,
the sampling settings, the per-episode random streams and the token counts are the same for
both, so a checkpoint gets the same prompts and the same distribution whichever runs it.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from wrappers.agents.base import Agent, AgentReply, AgentRequest, add_usage, stream_seed
from wrappers.agents.chat import ChatFormat

__all__ = ["LocalModelAgent"]


class LocalModelAgent(Agent):
    """A local causal LM answering each prompt as a single user chat turn.

    Sampling defaults are the study's evaluation settings (T = 0.6, top-p 0.95, top-k 20);
    ``temperature=0`` decodes greedily. The settings are applied exactly (no library or model
    defaults), and each request samples from the stream
    :func:`~wrappers.agents.base.stream_seed` of its episode and turn, so an evaluation replays
    exactly after a resume, whatever else shares its batch.

    Options an agent does not know are ignored (``make_agent`` passes every CLI option).
    ``chat_template_kwargs`` go to every ``apply_chat_template`` call (Qwen3:
    ``{"enable_thinking": False}``). When the template prefills the reply's opening (``<think>``,
    or an empty think block), the response returned is that prefill followed by the generated
    text, so the format check sees the whole reply (:class:`~wrappers.agents.chat.ChatFormat`).
    """

    text_only = True

    def __init__(
        self,
        tokenizer: Any,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.6,
        top_p: float = 0.95,
        top_k: int = 20,
        seed: int = 0,
        chat_template_kwargs: Mapping[str, object] | None = None,
        **_: object,
    ) -> None:
        from wrappers.agents.sampling import SamplingParams  # imports torch

        self.tokenizer = tokenizer
        self.chat = ChatFormat(tokenizer, dict(chat_template_kwargs or {}))
        self.sampling = SamplingParams(temperature, top_p, top_k, max_new_tokens)
        self.seed = seed
        self._usage = {"requests": 0.0, "prompt_tokens": 0.0, "completion_tokens": 0.0}

    @abstractmethod
    def generate(self, prompts: list[list[int]], seeds: list[int]) -> list[list[int]]:
        """One response (token ids, an end token kept) per prompt, sampled with
        :attr:`sampling`; ``seeds[i]`` seeds prompt ``i``'s stream."""

    def act(self, requests: Sequence[AgentRequest]) -> list[str]:
        return [reply.text for reply in self.respond(requests)]

    def respond(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        prompts = [self.chat.prompt_ids(r.prompt) for r in requests]
        seeds = [stream_seed(self.seed, r.episode_id, r.turn) for r in requests]
        responses = self.generate(prompts, seeds) if requests else []
        texts = self.tokenizer.batch_decode(responses, skip_special_tokens=True)
        replies = []
        for prompt, response, text in zip(prompts, responses, texts, strict=True):
            usage = {"requests": 1.0, "prompt_tokens": float(len(prompt)),
                     "completion_tokens": float(len(response))}
            add_usage(self._usage, usage)
            replies.append(AgentReply(self.chat.reply(text), usage=usage))
        return replies

    def weights(self) -> str | None:
        """The content hash of the weights that answer (:mod:`wrappers.agents.weights`), which
        the settings record keeps: ``None`` where unknown."""
        return None

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "weights": self.weights(), "sampling": asdict(self.sampling),
                "seed": self.seed, "chat_template_kwargs": self.chat.template_kwargs}

    def usage(self) -> dict[str, float]:
        usage = self._usage
        self._usage = dict.fromkeys(usage, 0.0)
        return usage
