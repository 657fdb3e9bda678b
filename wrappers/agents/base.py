"""The agent interface: a batch of prompts in, a batch of responses out.

Holds :class:`AgentRequest`, :class:`AgentReply` (a response with its per-request metadata),
:class:`Agent`, the errors agents raise (:class:`AgentError`, :class:`BudgetExhausted`),
:func:`stream_seed` (the seed of one episode's turn, for every random draw an agent makes), and
the agent registry (:func:`register_agent`, :func:`make_agent`, :data:`AGENTS`) that
``arlarena eval --agent NAME`` looks names up in.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

__all__ = [
    "AGENTS",
    "Agent",
    "AgentError",
    "AgentReply",
    "AgentRequest",
    "BudgetExhausted",
    "add_usage",
    "check_agent_env",
    "make_agent",
    "register_agent",
    "stream_seed",
]


class AgentError(RuntimeError):
    """An agent could not produce a response (e.g. the API server is unreachable).

    Raised from :meth:`Agent.act` / :meth:`Agent.respond`, it stops the whole run; a failure
    that concerns one request only is an :attr:`AgentReply.error` instead.
    """


class BudgetExhausted(AgentError):
    """The run's request budget is spent: the evaluation stops cleanly, results kept."""


@dataclass
class AgentRequest:
    """One prompt to answer.

    Attributes:
        prompt: the full templated prompt (the ``PromptWrapper`` observation).
        info: the env's latest ``info`` (admissible actions, task, image for visual envs, …).
        env: the wrapped env; only privileged agents (the expert) read ``env.unwrapped``.
        sample: index of this rollout among the samples of one task; sampling agents key their
            response cache on it, so rollouts differ while reruns repeat.
        episode_id: a stable name of the episode (e.g. ``seed=3/sample=1``) and ``turn`` the
            0-based turn: sampling agents draw from :func:`stream_seed` of them, so an episode
            gets the same random draws whatever else shares its batch, and after a resume.
    """

    prompt: str
    info: dict[str, Any] = field(default_factory=dict)
    env: gym.Env | None = None
    sample: int = 0
    episode_id: str = ""
    turn: int = 0


@dataclass
class AgentReply:
    """One response with what the agent knows about producing it.

    Attributes:
        text: the raw response (``""`` when ``error`` is set).
        usage: counters of this request (``requests``, ``prompt_tokens``,
            ``completion_tokens``, ``cost`` in USD where a price is known); summed per episode.
        transcript: how the response came about (e.g. each round of a debate), kept in the
            turn record.
        error: why no response could be had for this request; the runner ends that episode
            with this error and goes on with the others.
        facts: what the server said of the reply (``finish_reason``, ``served_model``,
            ``system_fingerprint``, ``reasoning``), kept in the turn record.
    """

    text: str
    usage: dict[str, float] = field(default_factory=dict)
    transcript: Any = None
    error: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)


def add_usage(total: dict[str, float], usage: dict[str, float]) -> dict[str, float]:
    """Add the counters of ``usage`` into ``total`` (in place) and return ``total``.

    >>> add_usage({"requests": 1}, {"requests": 2, "cost": 0.5})
    {'requests': 3, 'cost': 0.5}
    """
    for key, value in usage.items():
        total[key] = total.get(key, 0) + value
    return total


def stream_seed(seed: int, episode_id: str, turn: int) -> int:
    """A 63-bit seed for turn ``turn`` of episode ``episode_id`` under run seed ``seed``.

    Keyed by names, not positions, so a draw never depends on batch size, worker count, the
    order of requests or where a run was resumed.

    >>> stream_seed(0, "seed=3/sample=1", 2) == stream_seed(0, "seed=3/sample=1", 2)
    True
    >>> stream_seed(0, "seed=3/sample=1", 2) != stream_seed(0, "seed=3/sample=1", 3)
    True
    """
    key = f"{int(seed)}\x1f{episode_id}\x1f{int(turn)}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little") >> 1


class Agent(ABC):
    """Maps a batch of prompts to a batch of responses (one response per request)."""

    name: str = "agent"
    envs: tuple[str, ...] = ()
    """The env families (``arlarena_envs`` sub-packages: ``webshop``, ``tir_math``) an
    env-specific agent plays; empty: any env."""
    text_only: bool = False
    """Whether the agent is a model that reads the prompt's text alone, so a visual env's
    image never reaches it."""

    @classmethod
    def check_env(cls, env: str, env_kwargs: dict[str, Any] | None = None) -> None:
        """Raise ``ValueError`` when this agent cannot play ``env`` (a CLI name or id, made
        with ``env_kwargs``): one made for other envs (a WebShop heuristic on Sokoban would
        only score noise), or a text-only model on a visual env (it never sees the state)."""
        from arlarena_envs.registration import env_family, is_visual, resolve_env_id

        if cls.envs and env_family(env) not in cls.envs:
            raise ValueError(f"agent {cls.name} plays only {' and '.join(cls.envs)} envs, "
                             f"not {resolve_env_id(env)}")
        if cls.text_only and is_visual(env, env_kwargs):
            raise ValueError(f"{resolve_env_id(env)} shows its state as an image, which the "
                             f"text-only model of agent {cls.name} never sees; use an agent "
                             "that reads images (openai with a vision model) or the text env")

    @abstractmethod
    def act(self, requests: Sequence[AgentRequest]) -> list[str]:
        """Return one raw response per request, in order."""

    def respond(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        """Like :meth:`act`, with per-request metadata (usage, transcript, error).

        The evaluation runner calls this. The default wraps :meth:`act`; agents that know more
        (API agents, debate) override it and let ``act`` return the texts.
        """
        return [AgentReply(text) for text in self.act(requests)]

    def usage(self) -> dict[str, float]:
        """Resource counters since the last call (e.g. tokens), reset on read."""
        return {}

    def settings(self) -> dict[str, Any]:
        """What changes this agent's responses (model, endpoint, sampling, seed), as the
        results' settings record keeps it: a resume under other settings is refused. Default:
        the name and the ``seed`` attribute, if any."""
        return {"name": self.name, "seed": getattr(self, "seed", None)}

    def spending(self) -> list[dict[str, Any]]:
        """What an agent that pays per request spent since the last call, one dict per model
        and endpoint (:meth:`~wrappers.agents.openai_chat.ChatEndpoint.spent`), reset on
        read. Default: nothing."""
        return []

    def record_spending(self, journal: Callable[[dict[str, Any]], None] | None) -> None:
        """Give every change of what this agent spends to ``journal`` as it happens (one dict
        per change, as :meth:`spending` counts them), instead of keeping it for
        :meth:`spending`; ``None`` keeps it again. Default: an agent that spends nothing."""

    def stop(self) -> None:
        """Send no new request and wait for those in flight (an interrupted run: their
        replies are kept). Default: nothing is in flight."""

    def close(self) -> None:
        """Release resources (threads, HTTP clients, model memory)."""


AGENTS: dict[str, Callable[..., Agent]] = {}


def register_agent(name: str) -> Callable[[Callable[..., Agent]], Callable[..., Agent]]:
    """Decorator: register an agent factory under ``name`` for :func:`make_agent`."""

    def decorate(factory: Callable[..., Agent]) -> Callable[..., Agent]:
        if name in AGENTS:
            raise ValueError(f"agent {name!r} is already registered")
        AGENTS[name] = factory
        return factory

    return decorate


def check_agent_env(name: str, env: str, env_kwargs: dict[str, Any] | None = None) -> None:
    """:meth:`Agent.check_env` of the agent registered as ``name``, before it is built (a
    model is not loaded to be refused)."""
    factory = AGENTS.get(name)
    if isinstance(factory, type) and issubclass(factory, Agent):
        factory.check_env(env, env_kwargs)


def make_agent(name: str, **kwargs: Any) -> Agent:
    """Build the agent registered as ``name`` with the given options."""
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; known: {', '.join(sorted(AGENTS))}")
    return AGENTS[name](**kwargs)
