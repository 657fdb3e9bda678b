"""Agents: a batch of prompts in, a batch of responses out, registered by name.

Built in: ``random``, ``expert`` (the env's privileged expert), ``hf`` (a local transformers
model, the embedded SmolLM2 by default), ``openai`` (any OpenAI-compatible endpoint) and the
env-specific scripted agents (``math-coder``, ``math-random``, ``webshop-heuristic``,
``webshop-random``).
"""

from wrappers.agents import math_scripted, openai_chat, scripted, webshop_heuristic
from wrappers.agents.base import AGENTS, Agent, AgentError, AgentRequest, make_agent, register_agent
from wrappers.agents.hf import HFAgent

__all__ = [
    "AGENTS",
    "Agent",
    "AgentError",
    "AgentRequest",
    "HFAgent",
    "make_agent",
    "math_scripted",
    "openai_chat",
    "register_agent",
    "scripted",
    "webshop_heuristic",
]
