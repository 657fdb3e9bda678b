"""The study's interface around the envs: prompt templates with history, the strict format
check and penalty, and the agents that answer the prompts (scripted, local models, APIs)."""

from wrappers.format import ParsedResponse, format_response, parse_response
from wrappers.prompt import PromptWrapper
from wrappers.templates import TEMPLATES, render_prompt

__all__ = [
    "TEMPLATES",
    "ParsedResponse",
    "PromptWrapper",
    "format_response",
    "parse_response",
    "render_prompt",
]
