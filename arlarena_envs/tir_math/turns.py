"""The text of a TIR turn, by the study's rules: where a response is cut, its code, the tool output.

Holds :data:`RESULT_PREFIX`, :data:`FINAL_ANSWER_DEF`, :func:`cut_point`, :func:`first_code`,
:func:`prose`, :func:`truncate_content` and :func:`tool_output`.

The study (``recipe/math_agent/agent_utils.py``) generates one response, keeps it up to the end
of its first code block -- a fence opened by ```` ``` ````, ```` ```py ```` or ```` ```python ````
and a newline, closed by a newline and ```` ``` ```` -- runs that block, and appends the
execution result to the same response, which the model then continues. The study strips the
text before the block and the block, and joins them without the newline between (then
re-tokenises); here the response is kept as generated, up to the end of the block, so that what
the env shows and the tokens the model produced stay the same.
"""

from __future__ import annotations

import re

__all__ = [
    "FINAL_ANSWER_DEF",
    "RESULT_PREFIX",
    "cut_point",
    "first_code",
    "prose",
    "tool_output",
    "truncate_content",
]

RESULT_PREFIX = "Code execution result: "
"""What precedes each execution's output (the study's wording)."""

FINAL_ANSWER_DEF = '\ndef final_answer(result):\n    print(f"\\\\boxed{{{result}}}")\n\n'
"""What the study puts before every block (``append_final_answer_func``): ``final_answer(x)``
prints ``\\boxed{x}``, and the program goes on."""

_FENCE = "```"
_OPEN_CODE = re.compile(r"```(?:py|python)?\n")
_OPEN_ANY = re.compile(r"```[^\n`]*\n")
_TRUNCATED = "\n..._This content has been truncated to stay below {} characters_...\n"


def _first_block(text: str) -> tuple[int, int, int] | None:
    """Where the first code block's code starts and ends, and where its closing fence ends.

    The first opening fence decides: a later one's code would start later still, so if no
    closing follows the first, none follows any. One pass over ``text``: an action of a million
    characters full of openings costs what a short one does per character.
    """
    opening = _OPEN_CODE.search(text)
    if opening is None:
        return None
    close = text.find("\n" + _FENCE, opening.end())
    return None if close < 0 else (opening.end(), close, close + 4)


def cut_point(text: str) -> int:
    """Where the study cuts ``text``: the end of its first code block, else its end.

    >>> turn = "Compute.\\n```py\\nprint(1)\\n```\\nMore text, dropped."
    >>> turn[:cut_point(turn)]
    'Compute.\\n```py\\nprint(1)\\n```'
    """
    block = _first_block(text)
    return block[2] if block else len(text)


def first_code(text: str) -> str | None:
    """The code of the first block of ``text`` (stripped, as the study runs it), or ``None``.

    >>> first_code("```python\\n x = 1\\nprint(x) \\n```"), first_code("```text\\nno\\n```")
    ('x = 1\\nprint(x)', None)
    """
    block = _first_block(text)
    return text[block[0]:block[1]].strip() if block else None


def prose(text: str) -> str:
    """``text`` without its fenced blocks, whatever their language (for a strict grader): each
    from an opening fence (its info string without a backtick, then a newline) to the next
    fence, replaced by a space. One pass: after an opening with no fence after it, none
    follows (see :func:`_first_block`).

    >>> prose("a ```py\\nx``` b ```\\nunclosed")
    'a   b ```\\nunclosed'
    """
    kept, done = [], 0
    while (opening := _OPEN_ANY.search(text, done)) is not None:
        close = text.find(_FENCE, opening.end())
        if close < 0:
            break
        kept += [text[done:opening.start()], " "]
        done = close + 3
    return "".join(kept) + text[done:]


def truncate_content(content: str, max_chars: int = 512) -> str:
    """The study's cut: at most ``max_chars`` characters kept, half from the head and half
    from the tail, with its notice between.

    >>> cut = truncate_content("x" * 300 + "y" * 300)
    >>> cut.startswith("x" * 256) and cut.endswith("y" * 256), "truncated" in cut
    (True, True)
    """
    if len(content) <= max_chars:
        return content
    half = max_chars // 2
    return content[:half] + _TRUNCATED.format(max_chars) + content[-half:]


def tool_output(stdout: str, stderr: str, *, ok: bool, timed_out: bool,
                max_chars: int = 512) -> str:
    """What the study appends after a block: ``\\nCode execution result: <x>\\n``.

    ``<x>`` is the last line of stderr if stderr is not empty, else stdout, each cut by
    :func:`truncate_content`; ``Timeout`` on a timeout (the study's sandbox reports it as the
    whole of stderr); ``interpreter timeout`` for a failed run that printed nothing.

    >>> tool_output("", "Traceback ...\\nNameError: x\\n", ok=False, timed_out=False)
    '\\nCode execution result: NameError: x\\n'
    """
    if timed_out:
        stdout, stderr = "", "Timeout\n"
    if stderr:
        shown = truncate_content("\n".join(stderr.splitlines()[-1:]), max_chars)
    elif stdout:
        shown = truncate_content(stdout, max_chars)
    else:
        shown = "" if ok else "interpreter timeout"
    return f"\n{RESULT_PREFIX}{shown}\n"
