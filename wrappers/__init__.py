"""The study's interface around the envs: prompt templates, the format check, and agents.

The templates show each turn with its history, the format check and penalty judge each reply,
and the agents answer the prompts (scripted, local models, APIs).
"""

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
