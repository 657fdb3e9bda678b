"""The WebShop reward for a purchase: the study's scorer by default, upstream's finer revision too.

Holds :func:`score_purchase` (the task score in [0, 1] and its parts, a
:class:`RewardBreakdown`), the registry :data:`REWARD_RULES` of the two option rules, and the
rules the score is built from: :func:`fuzzy_score` (thefuzz 0.19's ``token_set_ratio``, as the
study pins it), :func:`normalize_color` (WebShop's colour list :data:`COLORS`),
:func:`type_reward`, :func:`count_attribute_matches`, :func:`study_option_matches` and
:func:`finer_option_matches`.

    R = r_type × (n_att + n_opt + 1[price ≤ price_upper]) / (|attributes| + |options| + 1)

The two rules differ only in n_opt, the matched options:

- ``"study"`` (default): the scorer of upstream WebShop's main branch, vendored unchanged in the
  study's repository, so its numbers were computed with it. For each goal option, is there a
  purchased value that matches it? A synthetic goal's options reach the matcher as
  ``(name, value)`` pairs, not values. Colour normalisation, a substring test on a string,
  becomes a membership test on the pair (the pair is a colour only if its name or value *is* a
  colour word), and fuzzy matching reads the pair through ``str()``, so the option's name joins
  the token set: "x-large" no longer matches "size: large", and a value normalised on the
  purchase side only ("standard" → "tan", "peppermint" → "mint") never matches its own goal.
  Human goals give plain values and are matched value to value.
- ``"finer"``: upstream commit 6ba9969 ("Finer matching for options", not on upstream's main
  branch). For each *purchased* option: a ``size`` must equal a goal value (after colour
  normalisation), any other option must fuzzily match one; failing that, the (normalised)
  value counts if it is a substring of the title, bullets or description.

Quirks of the original kept on purpose (and tested): token-set matching is lenient ("large"
matches "x-large": one token set contains the other, which scores 100); colour normalisation
maps a string to the first colour word of :data:`COLORS` it *contains*; an attribute also
matches if it is a plain substring of the lower-cased title, bullets or description; the type
factor is 0 whenever the two titles share no noun, even for the same query; under ``"finer"``
a purchase with more options than the goal has can score above 1. A goal with no price bound
counts the price as met.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import overload

from rapidfuzz import fuzz

from arlarena_envs.webshop.nouns import title_nouns
from arlarena_envs.webshop.schema import Goal, Product

__all__ = [
    "COLORS",
    "DEFAULT_REWARD",
    "EXACT_MATCH_OPTIONS",
    "MATCH_THRESHOLD",
    "REWARD_RULES",
    "RewardBreakdown",
    "check_reward",
    "count_attribute_matches",
    "finer_option_matches",
    "fuzzy_score",
    "normalize_color",
    "score_purchase",
    "study_option_matches",
    "type_reward",
]

MATCH_THRESHOLD = 85
"""A fuzzy score strictly above this is a match."""

COLORS: tuple[str, ...] = tuple(
    """alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze
    brown burgundy camel camo caramel champagne charcoal cheetah chestnut chocolate christmas
    coffee cognac copper coral cranberry cream crystal dark denim eggplant elephant espresso
    fuchsia gold granite grape graphite grass gray green grey heather indigo ivory ivy khaki
    lavender lemon leopard light lilac lime magenta maroon mauve merlot midnight mint mocha
    multicolor mushroom mustard natural navy nude olive orange peach pewter pink plum purple
    rainbow red rose royal rust sand sapphire seashell silver skull slate steel stone stonewash
    sunflower tan taupe teal tiger turquoise violet walnut wheat white wine yellow""".split()
)
"""WebShop's colour words (``normalize.py``), in the order :func:`normalize_color` tries them."""

EXACT_MATCH_OPTIONS = frozenset({"size"})
"""Option names the ``"finer"`` rule matches exactly rather than fuzzily."""

_HIGH_LATIN1 = dict.fromkeys(range(128, 256))
_NON_WORD = re.compile(r"\W")


def _process(text: str) -> str:
    # thefuzz 0.19's full_process with force_ascii: drop the characters 128-255 (only those),
    # every other non-word character to a space, lower-case, strip.
    return _NON_WORD.sub(" ", text.translate(_HIGH_LATIN1)).lower().strip()


def fuzzy_score(a: str, b: str) -> int:
    """thefuzz's ``token_set_ratio(a, b)``: 0–100, rounded; 0 if either side is empty.

    >>> fuzzy_score("large", "x-large"), fuzzy_score("long lasting", "lasting long")
    (100, 100)
    """
    a, b = _process(a), _process(b)
    if not a or not b:
        return 0
    return round(fuzz.token_set_ratio(a, b))


@overload
def normalize_color(value: str) -> str: ...
@overload
def normalize_color(value: tuple[str, str]) -> str | tuple[str, str]: ...
def normalize_color(value: str | tuple[str, str]) -> str | tuple[str, str]:
    """The first colour word of :data:`COLORS` that ``value`` contains, else ``value`` itself.

    On a string "contains" is a substring test; on a ``(name, value)`` pair (what the study's
    scorer passes for synthetic goals) it is a membership test.

    >>> normalize_color("navy blue"), normalize_color("standard"), normalize_color("16 ounce")
    ('blue', 'tan', '16 ounce')
    >>> normalize_color(("color", "navy blue")), normalize_color(("color", "navy"))
    (('color', 'navy blue'), 'navy')
    """
    for color in COLORS:
        if color in value:
            return color
    return value


def _in_texts(product: Product, text: str) -> bool:
    """Is ``text`` a substring of the lower-cased title, bullets or description?"""
    return (
        text in product.title.lower()
        or text in " ".join(product.bullets).lower()
        or text in product.description.lower()
    )


def count_attribute_matches(product: Product, attributes: Iterable[str]) -> int:
    """How many goal ``attributes`` the product has (fuzzy, else substring of its texts)."""
    return sum(
        any(fuzzy_score(have, wanted) > MATCH_THRESHOLD for have in product.attributes)
        or _in_texts(product, wanted)
        for wanted in attributes
    )


def study_option_matches(product: Product, goal: Goal, selected: Mapping[str, str]) -> int:
    """How many goal options some selected value matches, the study's way (module docs).

    ``product`` is unused: the study's rule never reads it (the signature is the registry's).
    """
    chosen = [normalize_color(value) for value in selected.values()]
    matched = 0
    for name, value in goal.options:
        wanted = str(normalize_color((name, value) if name else value))
        matched += any(fuzzy_score(have, wanted) > MATCH_THRESHOLD for have in chosen)
    return matched


def finer_option_matches(product: Product, goal: Goal, selected: Mapping[str, str]) -> int:
    """How many selected options match the goal, the way of upstream's 6ba9969 (module docs)."""
    wanted = [normalize_color(value) for value in goal.option_values]
    matched = 0
    for name, value in selected.items():
        have = normalize_color(value)
        if name.lower() in EXACT_MATCH_OPTIONS:
            hit = have in wanted
        else:
            hit = any(fuzzy_score(goal_value, have) > MATCH_THRESHOLD for goal_value in wanted)
        matched += hit or _in_texts(product, have)
    return matched


OptionRule = Callable[[Product, Goal, Mapping[str, str]], int]
REWARD_RULES: dict[str, OptionRule] = {
    "study": study_option_matches,
    "finer": finer_option_matches,
}
"""The option rules by name (``reward=`` of the env, the app and the server)."""
DEFAULT_REWARD = "study"


def check_reward(rule: str) -> str:
    """``rule`` if it names a rule of :data:`REWARD_RULES`, else a ``ValueError``."""
    if rule not in REWARD_RULES:
        raise ValueError(f"reward must be one of {sorted(REWARD_RULES)}, got {rule!r}")
    return rule


@dataclass(frozen=True)
class TypeMatch:
    """The type factor of the reward and what it was computed from."""

    r_type: float
    query_match: bool
    category_match: bool
    title_score: float


def type_reward(
    product: Product, goal: Goal, nouns: Callable[[str], list[str]] = title_nouns
) -> TypeMatch:
    """The type factor: 1, 0.5, 0.1 or 0 by query, breadcrumb and title-noun overlap
    (``nouns`` tags a title)."""
    query_match = product.query == goal.query
    have_crumbs = {level.strip() for level in product.product_category.split("›")}
    want_crumbs = {level.strip() for level in goal.product_category.split("›")}
    category_match = len(have_crumbs & want_crumbs) >= 2
    wanted_nouns = nouns(goal.name)
    if wanted_nouns:
        shared = set(nouns(product.title)) & set(wanted_nouns)
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
    """The task score of one purchase, its parts, and the option rule that scored it."""

    score: float
    r_type: float
    attributes_matched: int
    attributes_wanted: int
    options_matched: int
    options_wanted: int
    price_ok: bool
    title_score: float
    rule: str = DEFAULT_REWARD

    @property
    def won(self) -> bool:
        """Success: the score is exactly 1.0."""
        return self.score == 1.0


def score_purchase(
    product: Product,
    goal: Goal,
    selected: Mapping[str, str],
    price: float | None = None,
    rule: str = DEFAULT_REWARD,
) -> RewardBreakdown:
    """Score buying ``product`` with the ``selected`` options (name → value) against ``goal``.

    ``price`` defaults to the product's charged price; ``rule`` names the option rule.
    """
    count_options = REWARD_RULES[check_reward(rule)]
    paid = product.price if price is None else price
    price_ok = goal.price_upper is None or paid <= goal.price_upper
    kind = type_reward(product, goal)
    n_att = count_attribute_matches(product, goal.attributes)
    n_opt = count_options(product, goal, selected)
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
        rule=rule,
    )
