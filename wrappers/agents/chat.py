"""How prompts and responses become token ids: the model's chat template, one user turn.

Holds :func:`encode_prompt`, :func:`encode_response`, :func:`generation_prefill`,
:func:`strip_prefill` and :class:`ChatFormat` (a tokenizer with its chat-template keyword
arguments and prefill, what the ``hf`` agent, the trainer's rollouts and behaviour cloning
use), so a trained checkpoint is evaluated on exactly the prompts it was trained on.

Chat templates take keyword arguments (Qwen3's ``enable_thinking``), and some end the
generation prompt with the opening of the reply: ``<think>\\n`` (reasoning models that always
think) or an empty ``<think>\\n\\n</think>\\n\\n`` (Qwen3 with ``enable_thinking=False``).
The model then never writes that opening itself, so the reply the strict format check sees
is the prefill followed by the generated text, while the tokens a trainer learns from stay
exactly the generated ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "PREFILL_TAGS",
    "ChatFormat",
    "encode_prompt",
    "encode_response",
    "generation_prefill",
    "strip_prefill",
]

PREFILL_TAGS = ("<think>",)
"""Opening tags of the study's format that a chat template may write into the generation
prompt; a prefill starts at the first of them after the user turn."""

_SENTINEL = "ARLARENA-USER-TURN-SENTINEL"
_TAG = re.compile(r"</?[A-Za-z_]+>")


def _render(tokenizer: Any, prompt: str, template_kwargs: Mapping[str, Any] | None) -> str:
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False,
        **dict(template_kwargs or {}),
    )


def encode_prompt(
    tokenizer: Any, prompt: str, template_kwargs: Mapping[str, Any] | None = None
) -> list[int]:
    """The token ids of ``prompt`` as one user turn followed by the assistant header (and the
    template's prefill, if any); ``template_kwargs`` go to ``apply_chat_template``."""
    text = _render(tokenizer, prompt, template_kwargs)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def generation_prefill(tokenizer: Any, template_kwargs: Mapping[str, Any] | None = None) -> str:
    """The opening of the reply that the chat template writes after the assistant header:
    from the first of :data:`PREFILL_TAGS` after the user turn to the end ("" if none)."""
    text = _render(tokenizer, _SENTINEL, template_kwargs)
    tail = text[text.rindex(_SENTINEL) + len(_SENTINEL) :] if _SENTINEL in text else ""
    starts = [tail.lower().find(tag) for tag in PREFILL_TAGS]
    starts = [s for s in starts if s >= 0]
    return tail[min(starts) :] if starts else ""


def strip_prefill(response: str, prefill: str) -> str:
    """What the model itself must write of ``response`` when the template wrote ``prefill``.

    The prefill's tags are matched, in order and with anything between them, at the start of
    the response and removed: a prefilled ``<think>`` removes the response's ``<think>``, an
    empty prefilled think block removes the response's whole think block. A response that
    does not start that way is returned unchanged.

    >>> strip_prefill("<think>go up</think><action>up</action>", "<think>\\n")
    'go up</think><action>up</action>'
    >>> strip_prefill("<think>go up</think><action>up</action>", "<think>\\n\\n</think>\\n\\n")
    '<action>up</action>'
    """
    tags = _TAG.findall(prefill)
    if not tags:
        return response
    pattern = r"\s*" + r".*?".join(re.escape(t) for t in tags) + r"\s*"
    match = re.match(pattern, response, re.S | re.I)
    return response[match.end() :] if match else response


def encode_response(tokenizer: Any, response: str, prefill: str = "") -> list[int]:
    """The token ids of a response as the model should emit it after ``prefill``: the text
    (less what the prefill already wrote, :func:`strip_prefill`), then end-of-turn."""
    ids = tokenizer(strip_prefill(response, prefill), add_special_tokens=False)["input_ids"]
    return [*ids, int(tokenizer.eos_token_id)]


@dataclass
class ChatFormat:
    """A tokenizer's chat template with fixed keyword arguments, and the prefill they give.

    Attributes:
        tokenizer: a Hugging Face tokenizer with a chat template.
        template_kwargs: keyword arguments of every ``apply_chat_template`` call (e.g.
            ``{"enable_thinking": False}``).
        prefill: the reply's opening written by the template (:func:`generation_prefill`).
    """

    tokenizer: Any
    template_kwargs: dict[str, Any] = field(default_factory=dict)
    prefill: str = field(init=False)

    def __post_init__(self) -> None:
        self.template_kwargs = dict(self.template_kwargs or {})
        self.prefill = generation_prefill(self.tokenizer, self.template_kwargs)

    def prompt_ids(self, prompt: str) -> list[int]:
        """:func:`encode_prompt` with this format's keyword arguments."""
        return encode_prompt(self.tokenizer, prompt, self.template_kwargs)

    def response_ids(self, response: str) -> list[int]:
        """:func:`encode_response` after this format's prefill (behaviour-cloning targets)."""
        return encode_response(self.tokenizer, response, self.prefill)

    def reply(self, generated: str) -> str:
        """The whole reply as the format check must see it: the prefill, then ``generated``."""
        return self.prefill + generated
