"""The shop's URL scheme, shared by the Flask app (which builds links) and the env (which reads
where it is).

Every page lives under its session id, as in the original WebShop, and carries its state in the
URL, so pages of different sessions never share anything but the catalogue::

    /<sid>                                   search page (``?split=…&goal=…`` assigns a goal)
    /<sid>/results?keywords=…&page=N         results, 10 a page
    /<sid>/item/<ASIN>?keywords=…&page=N&options={json}
    /<sid>/item/<ASIN>/<description|features|reviews>?…
    /<sid>/buy/<ASIN>                        POST (form field ``options``): buy, then the done page
    /<sid>/done                              the score of the session's purchase

Holds the builders (:func:`search_url`, :func:`results_url`, :func:`item_url`, :func:`buy_url`,
:func:`done_url`), :func:`encode_options` / :func:`decode_options`, and :func:`parse_location`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qs, quote, urlencode, urlsplit

__all__ = [
    "SESSION_ID",
    "SUB_PAGES",
    "Location",
    "buy_url",
    "decode_options",
    "done_url",
    "encode_options",
    "item_url",
    "parse_location",
    "results_url",
    "search_url",
]

SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a session id may look like."""
SUB_PAGES = ("description", "features", "reviews")

_MAX_OPTIONS = 32


def encode_options(options: Mapping[str, str]) -> str:
    """Selected options as compact JSON (the ``options`` query parameter)."""
    return json.dumps(dict(options), separators=(",", ":"), ensure_ascii=False)


def decode_options(text: str | None) -> dict[str, str]:
    """The options of an ``options`` parameter; anything malformed reads as none."""
    try:
        data = json.loads(text or "{}")
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    pairs = [(k, v) for k, v in data.items() if isinstance(k, str) and isinstance(v, str)]
    return dict(pairs[:_MAX_OPTIONS])


def search_url(sid: str, split: str | None = None, goal: int | None = None) -> str:
    """The search page; with ``split`` and ``goal`` it (re)starts the session on that goal."""
    query = {k: v for k, v in (("split", split), ("goal", goal)) if v is not None}
    return f"/{sid}" + (f"?{urlencode(query)}" if query else "")


def results_url(sid: str, keywords: str, page: int) -> str:
    return f"/{sid}/results?{urlencode({'keywords': keywords, 'page': page})}"


def item_url(
    sid: str,
    asin: str,
    keywords: str,
    page: int,
    options: Mapping[str, str],
    sub: str | None = None,
) -> str:
    """An item page, or one of its sub-pages (``description``, ``features``, ``reviews``)."""
    path = f"/{sid}/item/{quote(asin, safe='')}" + (f"/{sub}" if sub else "")
    query = {"keywords": keywords, "page": page, "options": encode_options(options)}
    return f"{path}?{urlencode(query)}"


def buy_url(sid: str, asin: str) -> str:
    return f"/{sid}/buy/{quote(asin, safe='')}"


def done_url(sid: str) -> str:
    return f"/{sid}/done"


@dataclass(frozen=True)
class Location:
    """What a shop URL points at.

    ``kind`` is ``search``, ``results``, ``item``, ``description``, ``features``,
    ``reviews``, ``done`` or ``other``.
    """

    kind: str
    sid: str = ""
    asin: str = ""
    keywords: str = ""
    page: int = 1
    options: dict[str, str] = field(default_factory=dict)


def _page(values: list[str]) -> int:
    try:
        return max(1, int(values[0]))
    except (IndexError, ValueError):
        return 1


def parse_location(url: str) -> Location:
    """Read a shop URL (path and query; scheme and host are ignored).

    >>> where = parse_location("/a/item/B01?keywords=red+cap&page=2&options=%7B%22c%22:%22r%22%7D")
    >>> where.kind, where.sid, where.asin, where.keywords, where.page, where.options
    ('item', 'a', 'B01', 'red cap', 2, {'c': 'r'})
    """
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    query = parse_qs(parts.query)
    keywords = (query.get("keywords") or [""])[0]
    if not segments or not SESSION_ID.fullmatch(segments[0]):
        return Location("other")
    sid, rest = segments[0], segments[1:]
    if not rest:
        return Location("search", sid)
    if rest == ["results"]:
        return Location("results", sid, keywords=keywords, page=_page(query.get("page", [])))
    if rest == ["done"]:
        return Location("done", sid)
    if rest[0] == "item" and len(rest) in (2, 3):
        kind = rest[2] if len(rest) == 3 else "item"
        if kind in ("item", *SUB_PAGES):
            return Location(
                kind, sid, rest[1], keywords, _page(query.get("page", [])),
                decode_options((query.get("options") or [""])[0]),
            )
    return Location("other", sid)
