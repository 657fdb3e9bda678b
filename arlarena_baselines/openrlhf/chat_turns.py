"""User turns in the model's chat template, as the text OpenRLHF's agent loop appends.

OpenRLHF's multi-turn executor keeps one growing token sequence: the first observation, then
for each turn the model's response tokens and the tokens of the env feedback text. The
feedback must therefore close the assistant turn and open the next user turn exactly as the
chat template would. vLLM's response tokens end with the model's end-of-turn token (the
tokenizer's ``eos_token``) when it stops by itself, so the feedback leaves that token out.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ChatTurns"]

_A, _B, _C = "\x00USER-1\x00", "\x00ASSISTANT\x00", "\x00USER-2\x00"


class ChatTurns:
    """Renders the first user turn and the text between the model's turns.

    The between-turn text is read off the template once, from a probe conversation, so any
    chat template works (ChatML, Llama 3, ...).
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        probe = [
            {"role": "user", "content": _A},
            {"role": "assistant", "content": _B},
            {"role": "user", "content": _C},
        ]
        text = tokenizer.apply_chat_template(probe, add_generation_prompt=True, tokenize=False)
        between = text[text.index(_B) + len(_B) : text.index(_C)]
        eos = tokenizer.eos_token or ""
        self.opening = between.removeprefix(eos)
        self.closing = text[text.index(_C) + len(_C) :]

    def first(self, prompt: str) -> str:
        """``prompt`` as the conversation's first user turn, followed by the assistant header."""
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False
        )

    def next(self, prompt: str) -> str:
        """What follows a response: the end of the assistant turn, ``prompt`` as the next user
        turn, the assistant header."""
        return f"{self.opening}{prompt}{self.closing}"
