"""The agent interface: a batch of prompts in, a batch of responses out.

Holds :class:`AgentRequest`, :class:`Agent`, and the agent registry (:func:`register_agent`,
:func:`make_agent`, :data:`AGENTS`) that ``arlarena eval --agent NAME`` looks names up in.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

__all__ = ["AGENTS", "Agent", "AgentError", "AgentRequest", "make_agent", "register_agent"]


class AgentError(RuntimeError):
    """An agent could not produce a response (e.g. the API server is unreachable)."""


@dataclass
class AgentRequest:
    """One prompt to answer.

    Attributes:
        prompt: the full templated prompt (the ``PromptWrapper`` observation).
        info: the env's latest ``info`` (admissible actions, task, image for visual envs, …).
        env: the wrapped env; only privileged agents (the expert) read ``env.unwrapped``.
    """

    prompt: str
    info: dict[str, Any] = field(default_factory=dict)
    env: gym.Env | None = None


class Agent(ABC):
    """Maps a batch of prompts to a batch of responses (one response per request)."""

    name: str = "agent"

    @abstractmethod
    def act(self, requests: Sequence[AgentRequest]) -> list[str]:
        """Return one raw response per request, in order."""

    def usage(self) -> dict[str, float]:
        """Resource counters since the last call (e.g. tokens), reset on read."""
        return {}

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


def make_agent(name: str, **kwargs: Any) -> Agent:
    """Build the agent registered as ``name`` with the given options."""
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; known: {', '.join(sorted(AGENTS))}")
    return AGENTS[name](**kwargs)
