"""The text of a TIR turn: its fenced code blocks, its prose, and the turn with results spliced in.

Holds :data:`RESULT_PREFIX`, :class:`CodeBlock`, :func:`find_code_blocks`, :func:`prose` and
:func:`render_turn`. Only closed fences run; their info string must be empty or name Python
(``python``, ``py``, ``python3``), so a block the model labels ``output`` or ``text`` is text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["RESULT_PREFIX", "CodeBlock", "find_code_blocks", "prose", "render_turn"]

RESULT_PREFIX = "Code execution result: "
"""What precedes each execution's output in the transcript (the study's wording)."""

_FENCE = re.compile(r"```([^\n`]*)\n(.*?)```", re.S)
_PYTHON = frozenset({"", "python", "py", "python3", "py3"})


@dataclass(frozen=True)
class CodeBlock:
    """A closed fenced block: ``text[start:end]`` is the whole fence, ``code`` its body."""

    start: int
    end: int
    language: str
    code: str

    @property
    def runnable(self) -> bool:
        return self.language in _PYTHON


def find_code_blocks(text: str) -> list[CodeBlock]:
    """Every closed fenced block of ``text``, in order.

    >>> [b.code for b in find_code_blocks("a\\n```python\\nprint(1)\\n```\\n```output\\n1\\n```")]
    ['print(1)\\n', '1\\n']
    """
    blocks = []
    for match in _FENCE.finditer(text):
        info = match.group(1).strip().lower()
        language = info.split()[0] if info else ""
        blocks.append(CodeBlock(match.start(), match.end(), language, match.group(2)))
    return blocks


def prose(text: str) -> str:
    """``text`` without its fenced blocks (where a ``\\boxed{}`` answer counts)."""
    return _FENCE.sub(" ", text)


def render_turn(text: str, outputs: Sequence[tuple[CodeBlock, str]]) -> str:
    """``text`` with ``Code execution result: <output>`` after each block that ran.

    >>> turn = "Compute:\\n```python\\nprint(2 + 2)\\n```"
    >>> print(render_turn(turn, [(find_code_blocks(turn)[0], "4")]))
    Compute:
    ```python
    print(2 + 2)
    ```
    Code execution result: 4
    <BLANKLINE>
    """
    pieces, last = [], 0
    for block, output in sorted(outputs, key=lambda item: item[0].end):
        pieces += [text[last : block.end], f"\n{RESULT_PREFIX}{output}\n"]
        last = block.end
    pieces.append(text[last:])
    return "".join(pieces)
