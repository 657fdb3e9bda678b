"""The one rule for text, in the standard library only: which characters text may hold, and how
any ``str`` is made to hold only those.

Holds :data:`RANGES` (the admitted code points), :data:`OUTSIDE` (a pattern for any other
character), :data:`MAX_OBS_CHARS` (the longest observation), :func:`repair_surrogates`,
:func:`clean_text` and :func:`truncate_middle`.
:mod:`arlarena_envs.base` builds the envs' text space on it, and the TIR sandbox, which must
import nothing but the standard library (it is loaded on its own by an unprivileged user and by
``bench/tir_sandbox.py``), cleans every string it hands out with it.
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_OBS_CHARS", "OUTSIDE", "RANGES", "clean_text", "repair_surrogates", "truncate_middle",
]

MAX_OBS_CHARS = 100_000
"""Upper bound on an observation's length (the ``Text`` space's ``max_length``)."""

RANGES = ((0x09, 0x0A), (0x20, 0x7E), (0xA0, 0xD7FF), (0xE000, 0x10FFFF))
"""The admitted code points, as inclusive ranges: all of Unicode but the surrogates (UTF-8
cannot encode them) and the control characters other than tab and newline."""
_CLASS = "".join(re.escape(chr(lo)) + "-" + re.escape(chr(hi)) for lo, hi in RANGES)
OUTSIDE = re.compile(f"[^{_CLASS}]")
"""Matches any character that is not admitted."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def repair_surrogates(text: str) -> str:
    """``text`` with surrogate pairs joined into their character and lone surrogates U+FFFD.

    Lone surrogates reach Python when JSON carries ``\\ud800`` (or a stream splits a pair);
    UTF-8 cannot encode them, so they are the one thing that makes a ``str`` unwritable.

    >>> repair_surrogates("\\ud83d\\ude00 and \\ud800!") == "\\U0001f600 and \\ufffd!"
    True
    """
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


_ESCAPES = tuple(
    (char, "\n" if char == "\r" else f"\\x{ord(char):02x}")
    for char in map(chr, range(0xA0))
    if OUTSIDE.match(char)
)
"""What :func:`clean_text` puts for each control character outside the set (CR: a newline)."""


def clean_text(text: str, max_chars: int | None = None) -> str:
    """``text`` made of admitted characters only, legitimate text kept as it is.

    ``\\r\\n`` and ``\\r`` become ``\\n``; surrogates are repaired
    (:func:`repair_surrogates`); every other character outside the set (NUL, the C0 controls
    but tab and newline, DEL, C1) becomes a visible ``\\xNN`` escape, not dropped, so that
    neither the model nor a reader sees two words glued where a byte was, and an escaped NUL in
    a Python string literal still means NUL. With ``max_chars``, a longer result keeps its head
    and tail (:func:`truncate_middle`). Idempotent; text already clean costs one scan.

    >>> clean_text("a\\x00b\\r\\n\\ud800 \\U0001f600 caf\\u00e9\\t")
    'a\\\\x00b\\n\ufffd \U0001f600 caf\u00e9\\t'
    """
    if OUTSIDE.search(text) is not None:
        text = repair_surrogates(text).replace("\r\n", "\n")
        for char, escape in _ESCAPES:  # str.replace per character: 6x faster than translate
            if char in text:
                text = text.replace(char, escape)
    if max_chars is None or len(text) <= max_chars:
        return text
    return truncate_middle(text, max_chars)


def truncate_middle(text: str, max_chars: int) -> str:
    """Cut ``text`` to at most ``max_chars`` characters, keeping its head and tail.

    >>> short = truncate_middle("0123456789" * 20, 60)
    >>> len(short) <= 60, short[:4], short[-4:], "characters cut" in short
    (True, '0123', '6789', True)
    """
    if len(text) <= max_chars:
        return text
    marker = "\n[... {} characters cut ...]\n"
    room = max(max_chars - len(marker.format(len(text))), 0)
    head, tail = room // 2, room - room // 2
    return text[:head] + marker.format(len(text) - head - tail) + (text[-tail:] if tail else "")
