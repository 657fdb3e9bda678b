"""Formatting of the arena's numbers and markdown tables.

Holds :func:`pm` (``mean ± se``), :func:`signed` (``+mean ± se``), :func:`num` (significant
digits) and :func:`table` (a markdown table); NaN prints as ``–``.
"""

from __future__ import annotations

import math

__all__ = ["num", "pm", "signed", "table"]


def pm(value: tuple[float, float], digits: int = 3) -> str:
    """``mean ± se``.

    >>> pm((0.5, 0.0125)), pm((0.5, math.nan)), pm((math.nan, 0.1))
    ('0.500 ± 0.013', '0.500', '–')
    """
    mean, se = value
    if math.isnan(mean):
        return "–"
    return f"{mean:.{digits}f} ± {se:.{digits}f}" if not math.isnan(se) else f"{mean:.{digits}f}"


def signed(value: tuple[float, float], digits: int = 3) -> str:
    """``+mean ± se``.

    >>> signed((-0.0625, 0.01))
    '-0.062 ± 0.010'
    """
    mean, se = value
    if math.isnan(mean):
        return "–"
    return f"{mean:+.{digits}f} ± {se:.{digits}f}" if not math.isnan(se) else f"{mean:+.{digits}f}"


def num(value: float, digits: int = 4) -> str:
    """``value`` to ``digits`` significant digits."""
    return "–" if math.isnan(value) else f"{value:.{digits}g}"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """The lines of a markdown table."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in rows)]
