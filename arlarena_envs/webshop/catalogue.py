"""The generated catalogue: products with WebShop's schema, deterministic from a seed.

Holds :func:`generate_catalogue` (``products`` listings across the five categories of
:mod:`~arlarena_envs.webshop.vocabulary`), :func:`generate_product` (one listing) and the sizes
:data:`DEFAULT_PRODUCTS` / :data:`SMALL_PRODUCTS`. Product ``i`` is drawn from its own
``random.Random`` seeded with a string (hashed with SHA-512 by Python, never with ``hash()``),
so the same ``(seed, i)`` gives byte-identical products on every machine and in every process,
and the first ``n`` products of a larger catalogue are the catalogue of size ``n``.
"""

from __future__ import annotations

import gc
import math
import random
from collections.abc import Sequence
from functools import lru_cache

from arlarena_envs.webshop.schema import Product, Review, format_price
from arlarena_envs.webshop.vocabulary import (
    BRAND_SUFFIXES,
    BRAND_SYLLABLES,
    CATEGORIES,
    OPTION_POOLS,
    REVIEW_BODIES,
    REVIEW_TITLES,
    Category,
    ProductType,
)

__all__ = [
    "CATALOGUE_VERSION",
    "DEFAULT_PRODUCTS",
    "MAX_COMBINATIONS",
    "SMALL_PRODUCTS",
    "generate_catalogue",
    "generate_product",
]

CATALOGUE_VERSION = 1
"""Bumped whenever generation changes, so caches keyed on it are rebuilt."""
DEFAULT_PRODUCTS = 10_000
SMALL_PRODUCTS = 1_000
MAX_COMBINATIONS = 24
"""At most this many option combinations (and so synthetic goals) per product."""
BRANDS_PER_CATEGORY = 60

_ASIN_SPACE = 36**8
_BASE36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_VALUE_COUNTS = (1, 2, 3, 4, 5)
_VALUE_WEIGHTS = (16, 26, 28, 18, 12)
_REVIEW_SCORES = (5, 4, 3, 2, 1)
_REVIEW_WEIGHTS = (40, 30, 15, 8, 7)


def _rng(seed: int, *parts: object) -> random.Random:
    return random.Random(":".join(["arlarena-webshop", str(seed), *map(str, parts)]))


def _cap(phrase: str) -> str:
    return " ".join(word[:1].upper() + word[1:] for word in phrase.split(" "))


@lru_cache(maxsize=16)
def _brands(seed: int) -> dict[str, tuple[str, ...]]:
    brands: dict[str, tuple[str, ...]] = {}
    for category in CATEGORIES:
        rng = _rng(seed, "brands", category.name)
        names: list[str] = []
        while len(names) < BRANDS_PER_CATEGORY:
            stem = "".join(rng.choice(BRAND_SYLLABLES) for _ in range(rng.choice((2, 2, 3))))
            name = stem.capitalize() + rng.choice(BRAND_SUFFIXES)
            if name not in names:
                names.append(name)
        brands[category.name] = tuple(names)
    return brands


@lru_cache(maxsize=16)
def _asin_map(seed: int) -> tuple[int, int]:
    rng = _rng(seed, "asin")
    while True:
        a = rng.randrange(1, _ASIN_SPACE)
        if a % 2 and a % 3:  # coprime with 36: i -> a*i + b is a bijection
            return a, rng.randrange(_ASIN_SPACE)


def _asin(seed: int, index: int) -> str:
    a, b = _asin_map(seed)
    code = (a * index + b) % _ASIN_SPACE
    digits = []
    for _ in range(8):
        code, digit = divmod(code, 36)
        digits.append(_BASE36[digit])
    return "B0" + "".join(reversed(digits))


def _options(rng: random.Random, ptype: ProductType) -> dict[str, tuple[str, ...]]:
    options: dict[str, tuple[str, ...]] = {}
    used: set[str] = set()
    for position, (name, pool_name) in enumerate(ptype.options):
        if rng.random() >= (0.9, 0.75, 0.5)[min(position, 2)]:
            continue
        pool = [v for v in OPTION_POOLS[pool_name] if v not in used]
        count = min(rng.choices(_VALUE_COUNTS, _VALUE_WEIGHTS)[0], len(pool))
        picked = set(rng.sample(pool, count))
        options[name] = tuple(v for v in pool if v in picked)
        used |= picked
    while math.prod(len(v) for v in options.values()) > MAX_COMBINATIONS:
        widest = max(options, key=lambda n: len(options[n]))
        options[widest] = options[widest][:-1]
    return options


def _pricing(rng: random.Random, ptype: ProductType) -> tuple[str, float]:
    low, high = ptype.price
    base = math.floor(math.exp(rng.uniform(math.log(low), math.log(high)))) + 0.99
    if rng.random() < 0.35:
        top = min(math.floor(base * rng.uniform(1.2, 2.0)) + 0.99, 949.99)
        if top > base:
            return f"{format_price(base)} - {format_price(top)}", round(rng.uniform(base, top), 2)
    return format_price(base), base


def _bullets(
    rng: random.Random, category: Category, noun: str, attributes: Sequence[str]
) -> tuple[str, ...]:
    claims = rng.sample(category.claims, 4)
    bullets = [f"{attr.upper()} - {claims[k % 4]}" for k, attr in enumerate(attributes)]
    bullets.append(f"PREMIUM {noun.upper()} - {claims[-1]}")
    if rng.random() < 0.5:
        bullets.append(f"WHAT YOU GET - 1 x {noun.lower()}, {claims[-2]}")
    rng.shuffle(bullets)
    return tuple(bullets)


def _description(
    rng: random.Random, category: Category, brand: str, title_noun: str,
    attributes: Sequence[str],
) -> str:
    noun = title_noun.lower()
    first, second = rng.sample(category.claims, 2)
    traits = " and ".join(attributes[:2])
    templates = (
        f"The {brand} {noun} is {first}. It is {traits}. {second.capitalize()}.",
        f"Meet the {noun} from {brand}: {traits}, and {first}. {second.capitalize()}.",
        f"{brand} made this {noun} to be {traits}. {first.capitalize()}, {second}.",
    )
    return rng.choice(templates)


def _reviews(rng: random.Random, noun: str) -> tuple[tuple[Review, ...], str]:
    count = rng.choices((0, 1, 2, 3, 4), (30, 20, 20, 15, 15))[0]
    reviews = []
    for _ in range(count):
        score = rng.choices(_REVIEW_SCORES, _REVIEW_WEIGHTS)[0]
        title = rng.choice([t for s, t in REVIEW_TITLES if s == score])
        body = rng.choice(REVIEW_BODIES[score]).format(noun=noun.lower())
        reviews.append(Review(score, title, body))
    rating = f"{sum(r.score for r in reviews) / count:.1f}" if count else "N.A."
    return tuple(reviews), rating


def generate_product(seed: int, index: int) -> Product:
    """Listing ``index`` of the catalogue drawn with ``seed`` (whatever the catalogue size)."""
    rng = _rng(seed, "product", index)
    category = CATEGORIES[rng.randrange(len(CATEGORIES))]
    ptype = rng.choice(category.types)
    brand = rng.choice(_brands(seed)[category.name])
    attributes = tuple(rng.sample(category.attributes, rng.choice((2, 3, 3, 4, 5))))
    noun = rng.choice(ptype.nouns)

    words = [brand]
    if rng.random() < 0.5:
        words.append(_cap(attributes[0]))
    if rng.random() < 0.7:
        words.append(rng.choice(ptype.descriptors))
    words.append(noun)
    if rng.random() < 0.6:
        words.append(rng.choice(ptype.phrases))
    title = " ".join(words)
    if len(attributes) > 1 and rng.random() < 0.5:
        title += ", " + _cap(attributes[1])

    options = _options(rng, ptype)
    pricing, price = _pricing(rng, ptype)
    reviews, rating = _reviews(rng, noun)
    return Product(
        asin=_asin(seed, index),
        title=title,
        category=category.name,
        query=ptype.query,
        product_category=" › ".join((category.root, *ptype.crumbs)),
        description=_description(rng, category, brand, noun, attributes),
        bullets=_bullets(rng, category, noun, attributes),
        pricing=pricing,
        price=price,
        options=options,
        attributes=attributes,
        rating=rating,
        reviews=reviews,
    )


def generate_catalogue(products: int = DEFAULT_PRODUCTS, seed: int = 0) -> list[Product]:
    """``products`` listings drawn with ``seed``; the same arguments give the same catalogue.

    >>> [p.asin for p in generate_catalogue(2, seed=0)] == [p.asin for p in generate_catalogue(2)]
    True
    """
    if products < 1:
        raise ValueError(f"a catalogue needs at least one product, got {products}")
    paused = gc.isenabled()
    gc.disable()  # only new, live objects: collection passes would cost a third of the time
    try:
        return [generate_product(seed, i) for i in range(products)]
    finally:
        if paused:
            gc.enable()
