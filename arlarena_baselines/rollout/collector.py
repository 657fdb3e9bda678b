"""Training's side of the episode loop: the model that answers, and step samples.

Holds :class:`ModelResponder` (chat template (with its keyword arguments and prefill) + a
generation backend), :class:`StepSamples` (the consumer of :func:`~.episodes.play` that keeps
every turn as a :class:`~.samples.StepSample`, with its token ids and the sampler's log-probs)
and :func:`collect` (``G`` rollouts per task, all on the task's env seed, in waves).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from arlarena_baselines.rollout.envs import EnvPool
from arlarena_baselines.rollout.episodes import (
    CONTINUED_PROMPT_IDS,
    Consumer,
    Episode,
    Reply,
    Responder,
    Start,
    Task,
    Turn,
    play,
)
from arlarena_baselines.rollout.generation import GenerationBackend, SamplingParams, TokenScores
from arlarena_baselines.rollout.samples import Rollout, StepSample
from wrappers.agents.base import AgentRequest, stream_seed
from wrappers.agents.chat import ChatFormat

__all__ = ["ModelResponder", "StepSamples", "call_seed", "collect", "group_starts"]


class ModelResponder:
    """A causal LM behind a :class:`GenerationBackend`: chat-formatted prompts, sampled replies.

    A reply's text is the template's prefill (if any) followed by the decoded response, so the
    format check sees the whole reply; its ``response_ids`` are exactly the generated tokens.
    A continued response (prompt ids given in the request's info) gets no prefill. Each reply
    counts its tokens in ``usage``; with ``score`` and a backend whose scores are exact, it
    carries its tokens' log-probs and entropies from the sampler.
    """

    def __init__(
        self,
        backend: GenerationBackend,
        tokenizer: Any,
        sampling: SamplingParams,
        chat_template_kwargs: dict[str, Any] | None = None,
        score: bool = False,
    ) -> None:
        self.backend = backend
        self.tokenizer = tokenizer
        self.sampling = sampling
        self.chat = ChatFormat(tokenizer, dict(chat_template_kwargs or {}))
        self.score = score and backend.exact_scores

    def respond(self, requests: Sequence[AgentRequest], seed: int) -> list[Reply]:
        continued = [r.info.get(CONTINUED_PROMPT_IDS) for r in requests]
        prompt_ids = [c or self.chat.prompt_ids(r.prompt)
                      for c, r in zip(continued, requests, strict=True)]
        seeds = [stream_seed(seed, r.episode_id, r.turn) for r in requests]
        scores = TokenScores(len(requests)) if self.score else None
        if scores is None:  # a backend of the older signature still plugs in
            responses = self.backend.generate(prompt_ids, self.sampling, seeds)
        else:
            responses = self.backend.generate(prompt_ids, self.sampling, seeds, scores=scores)
        texts = self.tokenizer.batch_decode(responses, skip_special_tokens=True)
        replies = [  # a continued response goes on from its own text: no new prefill
            Reply(text, p, r) if c else Reply(self.chat.reply(text), p, r, self.chat.prefill)
            for c, text, p, r in zip(continued, texts, prompt_ids, responses, strict=True)
        ]
        for i, reply in enumerate(replies):
            reply.usage = {"requests": 1.0, "prompt_tokens": float(len(reply.prompt_ids)),
                           "completion_tokens": float(len(reply.response_ids))}
            if scores is not None:
                reply.log_probs, reply.entropies = scores.log_probs[i], scores.entropies[i]
        return replies


def call_seed(seed: int, *parts: int) -> int:
    """A 31-bit seed derived from ``seed`` and a call's coordinates (e.g. step, round)."""
    return int(np.random.SeedSequence([seed, *parts]).generate_state(1)[0] >> 1)


class StepSamples:
    """Collects every turn as a step sample and every finished episode in :attr:`rollout`
    (each episode's samples when it ends, with its return as their ``episode_score``)."""

    def __init__(self) -> None:
        self.rollout = Rollout()
        self._open: dict[str, list[StepSample]] = {}

    def turn(self, episode: Episode, turn: Turn) -> None:
        reply, info = turn.reply, turn.info
        self.rollout.generated_tokens += turn.generated
        self._open.setdefault(episode.traj_id, []).append(StepSample(
            reply.prompt_ids, reply.response_ids, float(turn.reward), episode.group_id,
            episode.traj_id, turn.step, str(turn.anchor), turn.valid,
            turn.prompt, reply.text, str(info.get("parsed_action") or ""),
            old_log_probs=reply.log_probs,
            entropy=float(np.mean(reply.entropies)) if reply.entropies else 0.0))

    def finish(self, episode: Episode) -> None:
        samples = self._open.pop(episode.traj_id, [])
        for sample in samples:
            sample.episode_score = episode.episode_return
        self.rollout.samples += samples
        self.rollout.episodes.append(episode)


def group_starts(tasks: Sequence[Task], group_size: int) -> list[Start]:
    """The episodes of ``tasks``: ``group_size`` each, rollout ``k`` of a task named
    ``group_id/k``."""
    return [Start(task, k, f"{task.group_id}/{k}") for task in tasks for k in range(group_size)]


def collect(
    pool: EnvPool,
    responder: Responder,
    tasks: Sequence[Task],
    group_size: int,
    *,
    max_turns: int | None = None,
    reset_options: dict[str, Any] | None = None,
    seed: int = 0,
    scorer: Callable[[list[StepSample]], None] | None = None,
    progress: bool = False,
    desc: str = "rollout",
    also: Sequence[Consumer] = (),
) -> Rollout:
    """Roll out ``group_size`` episodes per task; return every turn as a step sample.

    Episodes run in waves of ``pool.num_envs`` (:func:`~.episodes.play`); rollout ``k`` of a
    task is the episode ``group_id/k`` (:func:`group_starts`). Each sample's ``episode_score``
    is its trajectory's return (the sum of its rewards, format penalties included).
    ``scorer`` (e.g. the policy's :func:`~.forward.score_samples`) then fills the old log-probs
    and entropies, where the responder's sampler did not. ``also``: more consumers (e.g. a
    results file).
    """
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    starts = group_starts(tasks, group_size)
    samples = StepSamples()
    with tqdm(total=len(starts), desc=desc, unit="ep", leave=False, disable=not progress) as bar:
        play(pool, responder, starts, [samples, *also], seed=seed, max_turns=max_turns,
             reset_options=reset_options, refill=False, bar=bar)
    if scorer is not None and samples.rollout.samples:
        scorer(samples.rollout.samples)
    return samples.rollout
