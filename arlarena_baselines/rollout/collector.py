"""Multi-turn rollouts: ``G`` rollouts per task through the wrapper stack, batched per turn.

Holds :class:`Task` (a group: its id and env seed), the responders that answer a batch of
prompts (:class:`ModelResponder`: chat template (with its keyword arguments and prefill) + a
generation backend; :class:`AgentResponder`:
any registered agent, e.g. the expert, for behaviour-cloning data) and :func:`collect`, which
turns tasks into a :class:`~arlarena_baselines.rollout.samples.Rollout` of step samples.

All rollouts of a task reset their env with the task's seed; every turn, the live episodes'
prompts go to the responder in one batch, and the env pool steps them together. An env that
continues one response (TIR Math) gets each later prompt as token ids extended from the turn
before (:mod:`~arlarena_baselines.rollout.continuation`), not re-rendered from text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from tqdm.auto import tqdm

from arlarena_baselines.rollout.continuation import continue_ids
from arlarena_baselines.rollout.envs import EnvPool
from arlarena_baselines.rollout.generation import GenerationBackend, SamplingParams, TokenScores
from arlarena_baselines.rollout.samples import EpisodeResult, Rollout, StepSample
from wrappers.agents.base import Agent, AgentRequest, stream_seed
from wrappers.agents.chat import ChatFormat

__all__ = [
    "AgentResponder",
    "ModelResponder",
    "Reply",
    "Responder",
    "Task",
    "call_seed",
    "collect",
]


@dataclass(frozen=True)
class Task:
    """One group of rollouts: ``group_id`` names it, ``seed`` resets its envs."""

    group_id: str
    seed: int


@dataclass
class Reply:
    """A response text with its token ids (empty for agents that produce text only);
    ``prefill``: the opening of ``text`` that the chat template wrote into the prompt;
    ``log_probs`` and ``entropies``: each response token's, from the sampler (empty unless
    the responder scores its samples)."""

    text: str
    prompt_ids: list[int] = field(default_factory=list)
    response_ids: list[int] = field(default_factory=list)
    prefill: str = ""
    log_probs: list[float] = field(default_factory=list)
    entropies: list[float] = field(default_factory=list)


class Responder(Protocol):
    """Answers a batch of requests; request ``r`` samples from the stream
    ``stream_seed(seed, r.episode_id, r.turn)``, so a reply depends on its episode alone."""

    def respond(self, requests: Sequence[AgentRequest], seed: int) -> list[Reply]: ...


class ModelResponder:
    """A causal LM behind a :class:`GenerationBackend`: chat-formatted prompts, sampled replies.

    A reply's text is the template's prefill (if any) followed by the decoded response, so the
    format check sees the whole reply; its ``response_ids`` are exactly the generated tokens.
    A continued response (prompt ids given in the request's info) gets no prefill. With
    ``score`` and a backend whose scores are exact, each reply carries its tokens' log-probs
    and entropies from the sampler.
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
        if scores is not None:
            for reply, log_probs, entropies in zip(
                replies, scores.log_probs, scores.entropies, strict=True
            ):
                reply.log_probs, reply.entropies = log_probs, entropies
        return replies


class AgentResponder:
    """Any :class:`~wrappers.agents.base.Agent` (text only; privileged agents need an
    in-process env pool)."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def respond(self, requests: Sequence[AgentRequest], seed: int) -> list[Reply]:
        return [Reply(text) for text in self.agent.act(requests)]


CONTINUED_PROMPT_IDS = "continued_prompt_ids"
"""The request-info key under which the collector hands a model the prompt ids of a continued
response (see :meth:`_Live.continue_response`)."""


def call_seed(seed: int, *parts: int) -> int:
    """A 31-bit seed derived from ``seed`` and a call's coordinates (e.g. step, round)."""
    return int(np.random.SeedSequence([seed, *parts]).generate_state(1)[0] >> 1)


@dataclass
class _Live:
    task: Task
    sample: int
    slot: int
    prompt: str
    info: dict[str, Any]
    samples: list[StepSample] = field(default_factory=list)
    episode_return: float = 0.0
    prompt_ids: list[int] | None = None  # the next prompt of a continued response

    def request_info(self) -> dict[str, Any]:
        if self.prompt_ids is None:
            return self.info
        return {**self.info, CONTINUED_PROMPT_IDS: self.prompt_ids}

    def continue_response(
        self, responder: Responder, reply: Reply, info: dict, goes_on: bool
    ) -> None:
        """-- The TIR continuation hook (rollout/continuation.py). When the env continues one
        response (``info`` names a ``continuation``) and the reply has token ids, the sample
        keeps only the response ids the env kept, and the next prompt extends this one. --"""
        tokenizer = getattr(responder, "tokenizer", None)
        if "continuation" not in info or not reply.response_ids or tokenizer is None:
            return
        generated = len(reply.prefill)  # the env cut the whole reply; the ids are generated
        reply.response_ids, self.prompt_ids = continue_ids(
            tokenizer, reply.prompt_ids, reply.response_ids, reply.text[generated:],
            max(int(info["response_cut"]) - generated, 0), str(info["continuation"]), goes_on)
        kept = len(reply.response_ids)  # a prefix of the generated ids
        reply.log_probs, reply.entropies = reply.log_probs[:kept], reply.entropies[:kept]

    @property
    def traj_id(self) -> str:
        return f"{self.task.group_id}/{self.sample}"


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
) -> Rollout:
    """Roll out ``group_size`` episodes per task; return every turn as a step sample.

    Episodes run in waves of ``pool.num_envs``. An episode ends when the env terminates or
    truncates, or after ``max_turns`` turns. Each sample's ``episode_score`` is its
    trajectory's return (the sum of its rewards, format penalties included). ``scorer`` (e.g.
    the policy's :func:`~arlarena_baselines.rollout.forward.score_samples`) then fills the
    old log-probs and entropies, where the responder's sampler did not. Each turn samples
    from the stream of (``seed``, its trajectory id ``group_id/k``, the turn), so an episode
    is the same whatever the number of envs, the waves or the other tasks of the call.
    """
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    todo = [(task, k) for task in tasks for k in range(group_size)]
    rollout = Rollout()
    bar = tqdm(total=len(todo), desc=desc, unit="ep", leave=False, disable=not progress)
    try:
        for start in range(0, len(todo), pool.num_envs):
            chunk = todo[start : start + pool.num_envs]
            rollout.extend(_run_wave(pool, responder, chunk, max_turns, reset_options, seed, bar))
    finally:
        bar.close()
    if scorer is not None and rollout.samples:
        scorer(rollout.samples)
    return rollout


def _run_wave(
    pool: EnvPool,
    responder: Responder,
    chunk: list[tuple[Task, int]],
    max_turns: int | None,
    reset_options: dict[str, Any] | None,
    seed: int,
    bar: Any,
) -> Rollout:
    slots = list(range(len(chunk)))
    resets = pool.reset(slots, [task.seed for task, _ in chunk], reset_options)
    live = [
        _Live(task, k, slot, prompt, info)
        for (task, k), slot, (prompt, info) in zip(chunk, slots, resets, strict=True)
    ]
    rollout = Rollout()
    turn = 0
    while live:
        requests = [
            AgentRequest(e.prompt, e.request_info(), pool.env(e.slot), e.sample, e.traj_id, turn)
            for e in live
        ]
        replies = responder.respond(requests, seed)
        results = pool.step([e.slot for e in live], [r.text for r in replies])
        turn += 1
        still = []
        for episode, reply, (prompt, reward, terminated, truncated, info) in zip(
            live, replies, results, strict=True
        ):
            rollout.generated_tokens += len(reply.response_ids)
            episode.continue_response(responder, reply, info, not (terminated or truncated))
            episode.samples.append(
                StepSample(
                    prompt_ids=reply.prompt_ids,
                    response_ids=reply.response_ids,
                    reward=float(reward),
                    group_id=episode.task.group_id,
                    traj_id=episode.traj_id,
                    step=turn - 1,
                    anchor=str(episode.info.get("anchor", "")),
                    valid=bool(info.get("format_ok", True)),
                    prompt=episode.prompt,
                    response=reply.text,
                    action=str(info.get("parsed_action") or ""),
                    old_log_probs=reply.log_probs,
                    entropy=float(np.mean(reply.entropies)) if reply.entropies else 0.0,
                )
            )
            episode.episode_return += float(reward)
            episode.prompt, episode.info = prompt, info
            if terminated or truncated or (max_turns is not None and turn >= max_turns):
                rollout.samples += _finish(episode)
                rollout.episodes.append(_result(episode))
                bar.update()
            else:
                still.append(episode)
        live = still
    return rollout


def _finish(episode: _Live) -> list[StepSample]:
    for sample in episode.samples:
        sample.episode_score = episode.episode_return
    return episode.samples


def _result(episode: _Live) -> EpisodeResult:
    won = bool(episode.info.get("won", False))
    return EpisodeResult(
        group_id=episode.task.group_id,
        traj_id=episode.traj_id,
        seed=episode.task.seed,
        won=won,
        score=float(episode.info.get("score", float(won))),
        episode_return=episode.episode_return,
        turns=len(episode.samples),
        valid_turns=sum(s.valid for s in episode.samples),
        info={k: v for k, v in episode.info.items() if k != "image"},
    )
