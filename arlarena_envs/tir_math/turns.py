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

_BLOCK = re.compile(r"```(?:py|python)?\n(.*?)\n```", re.S)
_ANY_FENCE = re.compile(r"```[^\n`]*\n.*?```", re.S)
_TRUNCATED = "\n..._This content has been truncated to stay below {} characters_...\n"


def cut_point(text: str) -> int:
    """Where the study cuts ``text``: the end of its first code block, else its end.

    >>> turn = "Compute.\\n```py\\nprint(1)\\n```\\nMore text, dropped."
    >>> turn[:cut_point(turn)]
    'Compute.\\n```py\\nprint(1)\\n```'
    """
    match = _BLOCK.search(text)
    return match.end() if match else len(text)


def first_code(text: str) -> str | None:
    """The code of the first block of ``text`` (stripped, as the study runs it), or ``None``.

    >>> first_code("```python\\n x = 1\\nprint(x) \\n```"), first_code("```text\\nno\\n```")
    ('x = 1\\nprint(x)', None)
    """
    match = _BLOCK.search(text)
    return match.group(1).strip() if match else None


def prose(text: str) -> str:
    """``text`` without its fenced blocks, whatever their language (for a strict grader)."""
    return _ANY_FENCE.sub(" ", text)


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
