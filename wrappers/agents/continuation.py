"""Requests of envs that continue one response (TIR Math's protocol) instead of taking turns.

Holds :func:`continuation_of`. Such an env names the response so far in
``info["response_prefix"]``; its prompt (``PromptWrapper``'s observation) is the first user
message followed by that prefix, which is the chat form: the whole prompt as one new user
message. An agent that can continue a response (a completion endpoint, a local model) sends the
first user message with the chat template, then the prefix as the start of the assistant's
reply, and returns only what it adds.
"""

from __future__ import annotations

from wrappers.agents.base import AgentRequest

__all__ = ["continuation_of"]


def continuation_of(request: AgentRequest) -> tuple[str, str] | None:
    """``(first user message, response so far)`` of a continuing request, else ``None``.

    >>> continuation_of(AgentRequest("Question?Answer so", {"response_prefix": "Answer so"}))
    ('Question?', 'Answer so')
    >>> continuation_of(AgentRequest("Turn prompt")) is None
    True
    """
    prefix = request.info.get("response_prefix")
    if not isinstance(prefix, str) or not request.prompt.endswith(prefix):
        return None
    return request.prompt[: len(request.prompt) - len(prefix)], prefix
