"""The one episode loop: evaluation and training both play their episodes here, by :func:`play`.

It takes the episodes to play (:class:`Start`), an env pool (:mod:`.pools`), a responder (an
agent through :class:`AgentResponder`, or a model: :class:`~.collector.ModelResponder`) and the
consumers the caller plugs in (:class:`Consumer`: evaluation's results file, training's step
samples), which get every :class:`Turn` and every finished :class:`Episode`. Each turn, the
prompts of all live episodes go to the responder in one batch and the pool steps their envs
together; a request samples from the stream of (``seed``, its episode's id, its turn), so an
episode is the same whatever shares its batch, however many envs run, and after a resume. An
episode ends when its env terminates or truncates, after ``max_turns`` turns, when the caller's
``stop`` says so, or on a reply's ``error`` (that episode only). The loop alone decides whether
a turn's response was valid (:func:`format_valid`). An env that continues one response (TIR
Math) gets each later prompt as token ids extended from the turn before (:mod:`.continuation`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Protocol

from arlarena_baselines.rollout.continuation import continue_ids
from arlarena_baselines.rollout.envs import EnvPool, StepResult
from wrappers.agents.base import Agent, AgentRequest, add_usage

__all__ = ["CONTINUED_PROMPT_IDS", "AgentResponder", "Consumer", "Episode", "Reply", "Responder",
           "Start", "Task", "Turn", "format_valid", "play"]

CONTINUED_PROMPT_IDS = "continued_prompt_ids"
"""The request-info key under which a model gets the prompt ids of a continued response."""


def format_valid(info: Mapping[str, Any]) -> bool:
    """Whether a turn's response passed its env's format check: ``info["format_ok"]``, and
    valid when there is none, as :class:`~wrappers.prompt.PromptWrapper` judges an env with
    free-form actions (no check, nothing to fail; the study penalises only a failed check).

    >>> format_valid({"format_ok": False}), format_valid({"format_ok": True}), format_valid({})
    (False, True, True)
    """
    return bool(info.get("format_ok", True))


@dataclass(frozen=True)
class Task:
    """One group of rollouts: ``group_id`` names it, ``seed`` resets its envs."""

    group_id: str
    seed: int


@dataclass(frozen=True)
class Start:
    """One episode to play: the ``sample``-th rollout of ``task``, named ``id`` (the name of
    its random stream, and what a resume matches)."""

    task: Task
    sample: int
    id: str


@dataclass
class Reply:
    """A response text with its token ids (empty for agents that produce text only);
    ``prefill``: the opening of ``text`` that the chat template wrote into the prompt;
    ``log_probs``, ``entropies``: each response token's, from the sampler (empty unless the
    responder scores its samples); ``usage``, ``transcript``, ``error``, ``facts``: as in an
    :class:`~wrappers.agents.base.AgentReply`."""

    text: str
    prompt_ids: list[int] = field(default_factory=list)
    response_ids: list[int] = field(default_factory=list)
    prefill: str = ""
    log_probs: list[float] = field(default_factory=list)
    entropies: list[float] = field(default_factory=list)
    usage: dict[str, float] = field(default_factory=dict)
    transcript: Any = None
    error: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)


class Responder(Protocol):
    """Answers a batch of requests; request ``r`` samples from the stream
    ``stream_seed(seed, r.episode_id, r.turn)``, so a reply depends on its episode alone."""

    def respond(self, requests: Sequence[AgentRequest], seed: int) -> list[Reply]: ...


class AgentResponder:
    """Any :class:`~wrappers.agents.base.Agent` (text only; it draws from its own seed, and a
    privileged agent needs an in-process env pool)."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def respond(self, requests: Sequence[AgentRequest], seed: int) -> list[Reply]:
        return [Reply(r.text, usage=r.usage, transcript=r.transcript, error=r.error,
                      facts=r.facts)
                for r in self.agent.respond(requests)]


@dataclass
class Turn:
    """One played turn: ``prompt`` (the env's raw observation ``anchor`` in it) answered by
    ``reply`` (``generated`` tokens, before a continuation kept a prefix of them), and what the
    env's step returned."""

    step: int
    prompt: str
    anchor: Any
    reply: Reply
    generated: int
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]

    @property
    def valid(self) -> bool:
        """Whether the response passed its env's format check (:func:`format_valid`)."""
        return format_valid(self.info)


@dataclass
class Episode:
    """One episode: its slot in the pool, its latest prompt and ``info``, its running totals,
    and the ``error`` that ended it (``None``: it ended normally). ``group_id``, ``traj_id``
    and ``seed`` are its task's id, its own id and its env seed."""

    start: Start
    slot: int
    prompt: str
    info: dict[str, Any] = field(repr=False)
    turns: int = 0
    valid_turns: int = 0
    episode_return: float = 0.0
    usage: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    prompt_ids: list[int] | None = None  # the next prompt of a continued response
    task: Any = field(init=False)  # the instruction the episode started with

    def __post_init__(self) -> None:
        self.task = self.info.get("task", "")

    @property
    def group_id(self) -> str:
        return self.start.task.group_id

    @property
    def traj_id(self) -> str:
        return self.start.id

    @property
    def seed(self) -> int:
        return self.start.task.seed

    @property
    def won(self) -> bool:
        return bool(self.info.get("won", False)) and self.error is None

    @property
    def score(self) -> float:
        return 0.0 if self.error is not None else float(self.info.get("score", float(self.won)))

    def request(self, pool: EnvPool) -> AgentRequest:
        info = self.info if self.prompt_ids is None else {
            **self.info, CONTINUED_PROMPT_IDS: self.prompt_ids}
        return AgentRequest(self.prompt, info, pool.env(self.slot), self.start.sample,
                            self.start.id, self.turns)

    def advance(self, responder: Responder, reply: Reply, result: StepResult) -> Turn:
        """Take the env's answer to ``reply``: the turn played."""
        prompt, reward, terminated, truncated, info = result
        generated = len(reply.response_ids)
        tokenizer = getattr(responder, "tokenizer", None)
        if "continuation" in info and reply.response_ids and tokenizer is not None:
            # The env kept the reply up to ``response_cut`` and appended ``continuation``:
            # the sample keeps the response ids the env kept, the next prompt extends this one.
            cut = len(reply.prefill)  # the env cut the whole reply; the ids are generated
            reply.response_ids, self.prompt_ids = continue_ids(
                tokenizer, reply.prompt_ids, reply.response_ids, reply.text[cut:],
                max(int(info["response_cut"]) - cut, 0), str(info["continuation"]),
                not (terminated or truncated))
            kept = len(reply.response_ids)  # a prefix of the generated ids
            reply.log_probs, reply.entropies = reply.log_probs[:kept], reply.entropies[:kept]
        turn = Turn(self.turns, self.prompt, self.info.get("anchor", ""), reply, generated,
                    reward, terminated, truncated, info)
        self.turns += 1
        self.valid_turns += turn.valid
        self.episode_return += float(reward)
        self.prompt, self.info = prompt, info
        return turn


class Consumer(Protocol):
    """What a caller plugs into :func:`play`: it sees each turn, then each finished episode."""

    def turn(self, episode: Episode, turn: Turn) -> None: ...

    def finish(self, episode: Episode) -> None: ...


def play(
    pool: EnvPool,
    responder: Responder,
    starts: Iterable[Start],
    consumers: Sequence[Consumer],
    *,
    seed: int = 0,
    max_turns: int | None = None,
    reset_options: dict[str, Any] | None = None,
    refill: bool = True,
    stop: Callable[[Episode, Turn], bool] | None = None,
    bar: Any = None,
) -> None:
    """Play ``starts`` in the ``pool.num_envs`` slots of ``pool``, batched per turn. With
    ``refill`` a waiting episode starts as soon as a slot frees; without, the next wave starts
    when the whole wave has ended (a training batch keeps its samples in the order a wave's
    episodes finish). ``stop(episode, turn)``, after a turn, ends that episode when true (e.g. a
    token budget). ``bar`` (e.g. a ``tqdm``) counts the finished episodes."""
    todo = iter(starts)
    free = list(range(pool.num_envs))[::-1]
    live: list[Episode] = []
    while True:
        new = list(islice(todo, len(free))) if refill or not live else []
        if new:
            slots = [free.pop() for _ in new]
            resets = pool.reset(slots, [s.task.seed for s in new], reset_options)
            live += [Episode(s, slot, prompt, info)
                     for s, slot, (prompt, info) in zip(new, slots, resets, strict=True)]
        if not live:
            return
        replies = responder.respond([e.request(pool) for e in live], seed)
        stepped = [(e, r) for e, r in zip(live, replies, strict=True) if r.error is None]
        results = iter(pool.step([e.slot for e, _ in stepped], [r.text for _, r in stepped]))
        still = []
        for episode, reply in zip(live, replies, strict=True):
            add_usage(episode.usage, reply.usage)
            if reply.error is not None:
                episode.error = reply.error
            else:
                turn = episode.advance(responder, reply, next(results))
                for consumer in consumers:
                    consumer.turn(episode, turn)
                if not (turn.terminated or turn.truncated
                        or (max_turns is not None and episode.turns >= max_turns)
                        or (stop is not None and stop(episode, turn))):
                    still.append(episode)
                    continue
            free.append(episode.slot)
            for consumer in consumers:
                consumer.finish(episode)
            if bar is not None:
                bar.update()
        live = still
