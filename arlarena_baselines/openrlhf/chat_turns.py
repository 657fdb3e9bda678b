"""User turns in the model's chat template, as the text OpenRLHF's agent loop appends.

OpenRLHF's multi-turn executor keeps one growing token sequence: the first observation, then
for each turn the model's response tokens and the tokens of the env feedback text. The
feedback must therefore close the assistant turn and open the next user turn exactly as the
chat template would. vLLM's response tokens end with the stop token it stopped on when the
model stops by itself: the tokenizer's ``eos_token`` or any ``eos_token_id`` of the model's
generation config (Gemma's ``<end_of_turn>``, Llama 3's ``<|eot_id|>`` beside
``<|end_of_text|>``). When the template closes an assistant turn with one of those, the
feedback leaves it out. :func:`generation_stop_ids` reads the generation config's ids.
Chat-template keyword arguments (``enable_thinking``) apply to every rendering; a reply opening
that the template prefills (:func:`~wrappers.agents.chat.generation_prefill`) is in the
conversation's tokens already, and :attr:`ChatTurns.prefill` gives it to the format check.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from wrappers.agents.chat import generation_prefill

__all__ = ["ChatTurns", "generation_stop_ids"]


def generation_stop_ids(tokenizer: Any) -> list[int]:
    """The ``eos_token_id`` (one or a list) of the generation config beside ``tokenizer``'s
    files (what vLLM stops on besides the tokenizer's ``eos_token``), or none if it has none.
    Reads local files only."""
    from transformers import GenerationConfig

    try:
        config = GenerationConfig.from_pretrained(tokenizer.name_or_path, local_files_only=True)
    except (OSError, ValueError):
        return []
    ids = config.eos_token_id
    return [] if ids is None else [ids] if isinstance(ids, int) else list(ids)

_A, _B, _C = "\x00USER-1\x00", "\x00ASSISTANT\x00", "\x00USER-2\x00"


class ChatTurns:
    """Renders the first user turn and the text between the model's turns.

    The between-turn text is read off the template once, from a probe conversation, so any
    chat template works (ChatML, Llama 3, Gemma, ...); ``stop_ids`` are the generation
    config's end-of-sequence ids (:func:`generation_stop_ids`).
    """

    def __init__(self, tokenizer: Any, stop_ids: Iterable[int] = (),
                 template_kwargs: dict[str, Any] | None = None) -> None:
        self.tokenizer = tokenizer
        self.template_kwargs = dict(template_kwargs or {})
        self.prefill = generation_prefill(tokenizer, self.template_kwargs)
        probe = [
            {"role": "user", "content": _A},
            {"role": "assistant", "content": _B},
            {"role": "user", "content": _C},
        ]
        text = tokenizer.apply_chat_template(
            probe, add_generation_prompt=True, tokenize=False, **self.template_kwargs
        )
        between = text[text.index(_B) + len(_B) : text.index(_C)]
        stops = {tokenizer.eos_token, *tokenizer.convert_ids_to_tokens(list(stop_ids))} - {None, ""}
        stop = next((s for s in sorted(stops, key=len, reverse=True) if between.startswith(s)), "")
        self.opening = between.removeprefix(stop)
        self.closing = text[text.index(_C) + len(_C) :]

    def first(self, prompt: str) -> str:
        """``prompt`` as the conversation's first user turn, followed by the assistant header."""
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False,
            **self.template_kwargs,
        )

    def next(self, prompt: str) -> str:
        """What follows a response: the end of the assistant turn, ``prompt`` as the next user
        turn, the assistant header."""
        return f"{self.opening}{prompt}{self.closing}"
