"""WebShop: a Flask shop with a generated catalogue (or the original files), BM25 search set up
as pyserini's, WebShop's reward as the study's copy scores it, and a text env that drives the
shop like a browser.

Modules, one job each: ``vocabulary`` (word lists), ``schema`` (product / goal records),
``catalogue`` (the seeded generator), ``goals`` (synthetic goals, instructions, splits),
``original`` (loader for the original files), ``search`` (BM25 index and its cache), ``nouns``
and ``reward`` (the purchase score), ``shop`` (catalogue + goals + search per configuration),
``sessions``, ``urls``, ``app`` and ``server`` (the web application), ``textmode`` and
``client`` (reading and driving pages), ``env`` (the Gymnasium env), ``cache`` (cache folder).
Only light names are imported here; ``env``, ``app`` and ``server`` import Flask.
"""

from arlarena_envs.webshop.catalogue import DEFAULT_PRODUCTS, SMALL_PRODUCTS, generate_catalogue
from arlarena_envs.webshop.reward import score_purchase
from arlarena_envs.webshop.schema import Goal, Product

__all__ = [
    "DEFAULT_PRODUCTS",
    "SMALL_PRODUCTS",
    "Goal",
    "Product",
    "generate_catalogue",
    "score_purchase",
]
