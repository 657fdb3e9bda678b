"""Agents: a batch of prompts in, a batch of responses out, registered by name.

Built in: ``random``, ``expert`` (the env's privileged expert), ``hf`` (a local transformers
model, the embedded SmolLM2 by default), ``vllm`` (a local model on a vLLM engine), ``openai``
(any OpenAI-compatible endpoint), ``debate`` and ``aggressive-debate`` (several endpoints
arguing), and the env-specific scripted agents (``math-coder``, ``math-random``,
``webshop-heuristic``, ``webshop-random``).
"""

from wrappers.agents import (
    cache,
    debate,
    math_scripted,
    openai_chat,
    scripted,
    vllm_agent,
    webshop_heuristic,
)
from wrappers.agents.base import (
    AGENTS,
    Agent,
    AgentError,
    AgentReply,
    AgentRequest,
    BudgetExhausted,
    check_agent_env,
    make_agent,
    register_agent,
)
from wrappers.agents.hf import HFAgent
from wrappers.agents.local import LocalModelAgent
from wrappers.agents.vllm_agent import VLLMAgent

__all__ = [
    "AGENTS",
    "Agent",
    "AgentError",
    "AgentReply",
    "AgentRequest",
    "BudgetExhausted",
    "HFAgent",
    "LocalModelAgent",
    "VLLMAgent",
    "cache",
    "check_agent_env",
    "debate",
    "make_agent",
    "math_scripted",
    "openai_chat",
    "register_agent",
    "scripted",
    "vllm_agent",
    "webshop_heuristic",
]
