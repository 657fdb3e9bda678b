"""Token ids for envs that continue one response (TIR Math): the next prompt extends this one.

Holds :func:`continue_ids`, which the collector calls after a step whose ``info`` names a
``continuation`` (the text the env appended, e.g. ``\\nCode execution result: 42\\n``) and a
``response_cut`` (how many characters of the response the env kept). The next turn's prompt
ids are this turn's prompt ids, then the kept response ids, then the tokens of the appended
text, so that

- the response tokens are the model's own, never re-tokenised: the kept ids are the longest
  prefix of the generated ids whose text lies within the cut (when the token that closes the
  code block also holds text past the cut, it is dropped and its kept characters are tokenised
  with the appended text);
- the appended text is prompt: masked out of the loss of every later turn;
- a turn's sample trains only on what the env kept (text after the cut is dropped, as in the
  study, which instead re-tokenises the cut response text), and an end-of-turn token right
  after the cut is dropped too while the episode goes on: the response continues.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["continue_ids", "kept_tokens"]


def _text(tokenizer: Any, ids: Sequence[int]) -> str:
    return tokenizer.decode(list(ids), skip_special_tokens=True)


def kept_tokens(tokenizer: Any, response_ids: Sequence[int], kept_text: str) -> int:
    """The length of the longest prefix of ``response_ids`` whose text starts ``kept_text``."""
    low, high = 0, len(response_ids)
    while low < high:  # the last prefix no longer than the kept text
        middle = (low + high + 1) // 2
        if len(_text(tokenizer, response_ids[:middle])) <= len(kept_text):
            low = middle
        else:
            high = middle - 1
    while low > 0 and not kept_text.startswith(_text(tokenizer, response_ids[:low])):
        low -= 1
    return low


def continue_ids(
    tokenizer: Any,
    prompt_ids: Sequence[int],
    response_ids: Sequence[int],
    response: str,
    response_cut: int,
    continuation: str,
    goes_on: bool = True,
) -> tuple[list[int], list[int]]:
    """``(kept response ids, next prompt ids)`` of a continued response (see the module docs).

    ``response`` is the text the env got (the decoded ``response_ids``), of which it kept the
    first ``response_cut`` characters and appended ``continuation``; ``goes_on``: the episode
    continues (else an end-of-turn token the model produced stays in the sample).
    """
    kept_text = response[:response_cut]
    count = kept_tokens(tokenizer, response_ids, kept_text)
    kept = list(response_ids[:count])
    special = set(getattr(tokenizer, "all_special_ids", ()))
    while goes_on and kept and kept[-1] in special:
        kept.pop()  # an end-of-turn right after the block: the response goes on
    rest = kept_text[len(_text(tokenizer, kept)):]
    appended = tokenizer(rest + continuation, add_special_tokens=False)["input_ids"]
    return kept, [*prompt_ids, *kept, *appended]
