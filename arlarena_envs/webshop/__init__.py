"""WebShop: a Flask shop, its catalogue, search and reward, and a text env that browses it.

The catalogue is generated (or read from the original files), BM25 search is set up as
pyserini's, WebShop's reward is scored as the study's copy scores it, and the text env drives
the shop like a browser.

Modules, one job each: ``vocabulary`` (word lists), ``schema`` (product / goal records),
``catalogue`` (the seeded generator), ``goals`` (synthetic goals, instructions, splits),
``original`` (loader for the original files), ``search`` (BM25 index and its cache), ``nouns``
and ``reward`` (the purchase score), ``shop`` (catalogue + goals + search per configuration),
``sessions``, ``urls``, ``app`` and ``server`` (the web application), ``textmode`` and
``client`` (reading and driving pages), ``env`` (the Gymnasium env), ``cache`` (cache folder).
Only light names are imported here, so that the base install (without the ``webshop`` extra)
can import ``textmode``: ``score_purchase`` loads ``reward`` (rapidfuzz) on first use; ``env``,
``app`` and ``server`` import Flask.
"""

from typing import Any

from arlarena_envs.webshop.catalogue import DEFAULT_PRODUCTS, SMALL_PRODUCTS, generate_catalogue
from arlarena_envs.webshop.schema import Goal, Product

__all__ = [
    "DEFAULT_PRODUCTS",
    "SMALL_PRODUCTS",
    "Goal",
    "Product",
    "generate_catalogue",
    "score_purchase",
]


def __getattr__(name: str) -> Any:
    if name == "score_purchase":
        from arlarena_envs.webshop.reward import score_purchase

        return score_purchase
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
