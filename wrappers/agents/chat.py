"""How prompts and responses become token ids: the model's chat template, one user turn.

Holds :func:`encode_prompt` and :func:`encode_response`. The ``hf`` agent of ``arlarena eval``
and the trainer's rollouts both use them, so a trained checkpoint is evaluated on exactly the
prompts it was trained on.
"""

from __future__ import annotations

from typing import Any

__all__ = ["encode_prompt", "encode_response"]


def encode_prompt(tokenizer: Any, prompt: str) -> list[int]:
    """The token ids of ``prompt`` as one user turn followed by the assistant header."""
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False
    )
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def encode_response(tokenizer: Any, response: str) -> list[int]:
    """The token ids of a response as the model should emit it: the text, then end-of-turn."""
    ids = tokenizer(response, add_special_tokens=False)["input_ids"]
    return [*ids, int(tokenizer.eos_token_id)]
