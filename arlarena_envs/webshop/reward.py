"""The WebShop paper's reward for a purchase, with the original's fuzzy matching rules.

Holds :func:`score_purchase` (the task score in [0, 1] and its parts, a
:class:`RewardBreakdown`) and the rules it is built from: :func:`fuzzy_score` (thefuzz's
``token_set_ratio``, rounded to an int as thefuzz does), :func:`normalize_color`,
:func:`type_reward`, :func:`count_attribute_matches` and :func:`count_option_matches`.

    R = r_type × (n_att + n_opt + 1[price ≤ price_upper]) / (|attributes| + |options| + 1)

Quirks of the original kept on purpose (and tested): token-set matching is lenient ("large"
matches "x-large": the token sets overlap fully on one side, which scores 100); colour
normalisation maps a string to the first colour word it *contains*, so "standard" becomes
"tan" and "peppermint" becomes "mint"; an attribute also matches if it is a plain substring of
the lower-cased title, bullets or description; the type factor is 0 whenever the two titles
share no noun, even for the same query. A goal with no price bound counts the price as met.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rapidfuzz import fuzz

from arlarena_envs.webshop.nouns import title_nouns
from arlarena_envs.webshop.schema import Goal, Product

__all__ = [
    "COLORS",
    "MATCH_THRESHOLD",
    "RewardBreakdown",
    "count_attribute_matches",
    "count_option_matches",
    "fuzzy_score",
    "normalize_color",
    "score_purchase",
    "type_reward",
]

MATCH_THRESHOLD = 85
"""A fuzzy score strictly above this is a match."""

COLORS: tuple[str, ...] = (
    "apricot", "aqua", "beige", "black", "blue", "blush", "bronze", "brown", "burgundy", "camel",
    "charcoal", "copper", "coral", "cream", "cyan", "gold", "gray", "green", "grey", "indigo",
    "ivory", "khaki", "lavender", "lilac", "magenta", "maroon", "mauve", "mint", "mustard",
    "navy", "nude", "olive", "orange", "peach", "pink", "plum", "purple", "red", "rose", "rust",
    "salmon", "sand", "silver", "tan", "taupe", "teal", "turquoise", "violet", "white", "wine",
    "yellow",
)
"""Colour words, in the order :func:`normalize_color` tries them."""

_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def _process(text: str) -> str:
    # thefuzz's full_process with force_ascii: drop non-ASCII, lower-case, non-alphanumerics to
    # spaces, strip.
    ascii_text = text.encode("ascii", "ignore").decode()
    return _NON_ALNUM.sub(" ", ascii_text.lower()).strip()


def fuzzy_score(a: str, b: str) -> int:
    """thefuzz's ``token_set_ratio(a, b)``: 0–100, rounded; 0 if either side is empty.

    >>> fuzzy_score("large", "x-large"), fuzzy_score("long lasting", "lasting long")
    (100, 100)
    """
    a, b = _process(a), _process(b)
    if not a or not b:
        return 0
    return round(fuzz.token_set_ratio(a, b))


def normalize_color(value: str) -> str:
    """The first colour word of :data:`COLORS` that ``value`` contains, else ``value`` itself.

    >>> normalize_color("navy blue"), normalize_color("standard"), normalize_color("16 ounce")
    ('blue', 'tan', '16 ounce')
    """
    for color in COLORS:
        if color in value:
            return color
    return value


def count_attribute_matches(product: Product, attributes: Iterable[str]) -> int:
    """How many goal ``attributes`` the product has (fuzzy, else substring of its texts)."""
    texts = (
        product.title.lower(),
        " ".join(product.bullets).lower(),
        product.description.lower(),
    )
    matched = 0
    for wanted in attributes:
        if any(fuzzy_score(have, wanted) > MATCH_THRESHOLD for have in product.attributes):
            matched += 1
        elif any(wanted in text for text in texts):
            matched += 1
    return matched


def count_option_matches(selected: Iterable[str], wanted: Iterable[str]) -> int:
    """How many ``wanted`` option values some ``selected`` value matches (after colour norm)."""
    chosen = [normalize_color(value) for value in selected]
    return sum(
        any(fuzzy_score(have, normalize_color(value)) > MATCH_THRESHOLD for have in chosen)
        for value in wanted
    )


@dataclass(frozen=True)
class TypeMatch:
    """The type factor of the reward and what it was computed from."""

    r_type: float
    query_match: bool
    category_match: bool
    title_score: float


def type_reward(product: Product, goal: Goal) -> TypeMatch:
    """The type factor: 1, 0.5, 0.1 or 0 by query, breadcrumb and title-noun overlap."""
    query_match = product.query == goal.query
    have_crumbs = {level.strip() for level in product.product_category.split("›")}
    want_crumbs = {level.strip() for level in goal.product_category.split("›")}
    category_match = len(have_crumbs & want_crumbs) >= 2
    wanted_nouns = title_nouns(goal.name)
    if wanted_nouns:
        shared = set(title_nouns(product.title)) & set(wanted_nouns)
        title_score = len(shared) / len(wanted_nouns)
    else:
        title_score = 0.2
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return TypeMatch(r_type, query_match, category_match, title_score)


@dataclass(frozen=True)
class RewardBreakdown:
    """The task score of one purchase and its parts."""

    score: float
    r_type: float
    attributes_matched: int
    attributes_wanted: int
    options_matched: int
    options_wanted: int
    price_ok: bool
    title_score: float

    @property
    def won(self) -> bool:
        """Success: the score is exactly 1.0."""
        return self.score == 1.0


def score_purchase(
    product: Product,
    goal: Goal,
    selected: Mapping[str, str],
    price: float | None = None,
) -> RewardBreakdown:
    """Score buying ``product`` with the ``selected`` options (name → value) against ``goal``.

    ``price`` defaults to the product's charged price.
    """
    paid = product.price if price is None else price
    price_ok = goal.price_upper is None or paid <= goal.price_upper
    kind = type_reward(product, goal)
    n_att = count_attribute_matches(product, goal.attributes)
    n_opt = count_option_matches(selected.values(), goal.option_values)
    total = len(goal.attributes) + len(goal.options) + 1
    score = kind.r_type * (n_att + n_opt + int(price_ok)) / total
    return RewardBreakdown(
        score=score,
        r_type=kind.r_type,
        attributes_matched=n_att,
        attributes_wanted=len(goal.attributes),
        options_matched=n_opt,
        options_wanted=len(goal.options),
        price_ok=price_ok,
        title_score=kind.title_score,
    )
