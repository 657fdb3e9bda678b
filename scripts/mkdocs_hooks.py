"""MkDocs hooks of the documentation site (``mkdocs.yml``'s ``hooks``).

The docstrings hold doctests as plain ``>>>`` lines, outside Google-style ``Examples:``
sections (which mkdocstrings fences itself); as Markdown they would read as nested block quotes,
their output as links. :class:`DoctestFences` fences each run of doctest lines, with its output
up to the next blank line, as a ``pycon`` block, in the pages and the docstrings alike.
"""

from __future__ import annotations

import re
from typing import Any

from markdown import Extension
from markdown.preprocessors import Preprocessor
from mkdocs.plugins import event_priority

_FENCE = re.compile(r"^\s*(```|~~~)")
_PROMPT = re.compile(r"^(\s*)>>>( |$)")


class _Fencer(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        fenced, indent = False, None
        for line in lines:
            if indent is not None and not line.strip():
                out += [f"{indent}```", line]
                indent = None
                continue
            if indent is None and _FENCE.match(line):
                fenced = not fenced
            elif indent is None and not fenced and (m := _PROMPT.match(line)):
                indent = m.group(1)
                out.append(f"{indent}```pycon")
            out.append(line)
        if indent is not None:
            out.append(f"{indent}```")
        return out


class DoctestFences(Extension):
    """Fence doctest runs (see the module docstring)."""

    def extendMarkdown(self, md: Any) -> None:  # Markdown's name for the hook
        md.preprocessors.register(_Fencer(md), "doctest_fences", 40)


@event_priority(100)  # before mkdocstrings reads the extensions for its docstrings
def on_config(config: Any) -> Any:
    config.markdown_extensions.append(DoctestFences())
    return config
