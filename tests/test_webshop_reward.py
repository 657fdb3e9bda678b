"""The WebShop reward: exact scores on hand-made goals and purchases, and the original's quirks."""

from __future__ import annotations

from dataclasses import replace

import pytest

from arlarena_envs.webshop.nouns import title_nouns
from arlarena_envs.webshop.reward import (
    count_attribute_matches,
    count_option_matches,
    fuzzy_score,
    normalize_color,
    score_purchase,
    type_reward,
)
from arlarena_envs.webshop.schema import Goal, Product

SHAMPOO = Product(
    asin="B0SHAMPOO1",
    title="Kalu Long Lasting Hydrating Shampoo for Dry Hair",
    category="beauty",
    query="shampoo",
    product_category="Beauty & Personal Care › Hair Care › Shampoo & Conditioner › Shampoos",
    description="A gentle shampoo for every day.",
    bullets=("PARABEN FREE - gentle on the scalp", "Salon quality at home"),
    pricing="$12.99",
    price=12.99,
    options={"size": ("8 fl oz", "16.9 fl oz"), "scent": ("lavender", "coconut")},
    attributes=("long lasting", "sulfate free"),
)
GOAL = Goal(
    index=0,
    asin=SHAMPOO.asin,
    category="beauty",
    query="shampoo",
    name=SHAMPOO.title,
    product_category=SHAMPOO.product_category,
    instruction="i need a long lasting, sulfate free shampoo in 16.9 fl oz with lavender scent",
    attributes=("long lasting", "sulfate free"),
    options=(("size", "16.9 fl oz"), ("scent", "lavender")),
    price_upper=20.0,
)
MOUSE = Product(
    asin="B0MOUSE001",
    title="Zenta Wireless Mouse for Laptop",
    category="electronics",
    query="wireless mouse",
    product_category="Electronics › Computers & Accessories › Mice",
    description="A quiet mouse.",
    bullets=("SILENT CLICKS - for the office",),
    pricing="$9.99",
    price=9.99,
    options={"color": ("black", "lavender")},
    attributes=("long lasting",),
)
BRUSH = Product(  # shares 1 of 6 goal nouns, another query, one breadcrumb level: r_type 0.5
    asin="B0BRUSH001",
    title="Veta Hair Brush",
    category="beauty",
    query="hair brush",
    product_category="Beauty & Personal Care › Tools & Accessories › Brushes",
    description="A brush.",
    bullets=(),
    pricing="$9.99",
    price=9.99,
    options={"color": ("lavender",)},
    attributes=("long lasting",),
)
MUG = Product(  # shares 1 of 12 goal nouns: r_type 0.1
    asin="B0MUG00001",
    title="Zen Travel Mug",
    category="grocery",
    query="travel mug",
    product_category="Home & Kitchen › Kitchen & Dining › Mugs",
    description="Keeps coffee hot.",
    bullets=(),
    pricing="$9.99",
    price=9.99,
    attributes=("long lasting",),
)
SIX_NOUN_GOAL = replace(GOAL, name="Kalu Shampoo for Hair with Argan Oil Bottle")
TWELVE_NOUN_GOAL = replace(
    GOAL, name="Kalu Shampoo Hair Argan Oil Bottle Pump Gift Set Salon Spa Travel"
)
ALL = {"size": "16.9 fl oz", "scent": "lavender"}

CASES = [
    # (case, product, goal, selected options, price paid, expected score)
    ("full match", SHAMPOO, GOAL, ALL, None, 1.0),
    ("wrong type: no shared title noun", MOUSE, GOAL, {"color": "lavender"}, None, 0.0),
    ("missing option", SHAMPOO, GOAL, {"size": "16.9 fl oz"}, None, 4 / 5),
    ("no option chosen", SHAMPOO, GOAL, {}, None, 3 / 5),
    ("wrong option value", SHAMPOO, GOAL, {"size": "8 fl oz", "scent": "lavender"}, None, 4 / 5),
    ("over the price bound", SHAMPOO, GOAL, ALL, 25.0, 4 / 5),
    ("exactly at the bound", SHAMPOO, GOAL, ALL, 20.0, 1.0),
    (
        "partial attributes (one fuzzy, one substring of a bullet, one missing)",
        SHAMPOO,
        replace(GOAL, attributes=("lasting long", "paraben free", "cruelty free")),
        ALL, None, 5 / 6,
    ),
    ("no price bound counts as met", SHAMPOO, replace(GOAL, price_upper=None), ALL, 99.0, 1.0),
    ("half type: 1 of 6 nouns, other query", BRUSH, SIX_NOUN_GOAL, {"color": "lavender"},
     None, 0.5 * 3 / 5),
    ("tenth type: 1 of 12 nouns", MUG, TWELVE_NOUN_GOAL, {}, None, 0.1 * 2 / 5),
    ("same query rescues a weak title overlap", replace(BRUSH, query="shampoo"),
     SIX_NOUN_GOAL, {"color": "lavender"}, None, 3 / 5),
]


@pytest.mark.parametrize(
    ("product", "goal", "selected", "price", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_score_of_hand_made_purchases(
    product: Product, goal: Goal, selected: dict[str, str], price: float | None, expected: float
) -> None:
    breakdown = score_purchase(product, goal, selected, price=price)
    assert breakdown.score == pytest.approx(expected, abs=1e-12)
    assert breakdown.won == (expected == 1.0)


def test_full_match_is_exactly_one_and_parts_are_reported() -> None:
    breakdown = score_purchase(SHAMPOO, GOAL, ALL)
    assert breakdown.score == 1.0  # exactly, so that won (score == 1.0) holds
    assert (breakdown.attributes_matched, breakdown.options_matched) == (2, 2)
    assert breakdown.price_ok and breakdown.r_type == 1.0


def test_type_factor_levels() -> None:
    assert type_reward(SHAMPOO, GOAL).r_type == 1.0
    assert type_reward(MOUSE, GOAL).r_type == 0.0
    half = type_reward(BRUSH, SIX_NOUN_GOAL)
    assert (half.r_type, half.query_match, half.category_match) == (0.5, False, False)
    assert half.title_score == pytest.approx(1 / 6)
    assert type_reward(MUG, TWELVE_NOUN_GOAL).r_type == 0.1
    # Two shared breadcrumb levels are enough, even with another query.
    sibling = replace(
        BRUSH, product_category="Beauty & Personal Care › Hair Care › Styling Tools"
    )
    assert type_reward(sibling, SIX_NOUN_GOAL).category_match


def test_same_query_with_no_shared_noun_still_scores_zero() -> None:
    # The original's quirk: the title-noun rule overrides the query match.
    other = replace(MOUSE, query="shampoo", product_category=SHAMPOO.product_category)
    assert type_reward(other, GOAL).r_type == 0.0


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("large", "x-large", 100),  # lenient: one token set contains the other
        ("fuzzy was a bear", "fuzzy fuzzy was a bear", 100),
        ("Long-Lasting", "long lasting", 100),
        ("", "anything", 0),
        ("café", "caf", 100),  # non-ASCII is dropped, as thefuzz's force_ascii does
    ],
)
def test_fuzzy_score_follows_thefuzz_token_set_ratio(a: str, b: str, expected: int) -> None:
    assert fuzzy_score(a, b) == expected


def test_fuzzy_score_threshold_is_strict() -> None:
    assert fuzzy_score("sulfate free", "cruelty free") <= 85
    assert count_attribute_matches(SHAMPOO, ["cruelty free"]) == 0


@pytest.mark.parametrize(
    ("value", "normalized"),
    [
        ("navy blue", "blue"),
        ("light grey", "grey"),
        ("black | white", "black"),
        ("standard", "tan"),  # substring misfire kept from the original
        ("peppermint", "mint"),
        ("16.9 fl oz", "16.9 fl oz"),
    ],
)
def test_colour_normalisation(value: str, normalized: str) -> None:
    assert normalize_color(value) == normalized


def test_option_matching_quirks() -> None:
    assert count_option_matches(["x-large"], ["large"]) == 1
    assert count_option_matches(["standard"], ["tan"]) == 1
    assert count_option_matches(["royal blue"], ["navy blue"]) == 1
    assert count_option_matches(["8 fl oz"], ["16.9 fl oz"]) == 0
    assert count_option_matches([], ["large"]) == 0


def test_attribute_substring_rule_reads_title_bullets_and_description() -> None:
    product = replace(SHAMPOO, attributes=())
    assert count_attribute_matches(product, ["hydrating"]) == 1  # title
    assert count_attribute_matches(product, ["paraben free"]) == 1  # bullet, lower-cased
    assert count_attribute_matches(product, ["every day"]) == 1  # description
    assert count_attribute_matches(product, ["vegan"]) == 0


@pytest.mark.parametrize(
    ("title", "nouns"),
    [
        ("Kalu Long Lasting Hydrating Shampoo for Dry Hair", ["kalu", "shampoo", "hair"]),
        ("Zenta Wireless Silent Mouse with USB Receiver", ["zenta", "mouse", "usb", "receiver"]),
        ("Comfortable Cotton Clothing Set, 2 Pack", ["clothing", "set", "pack"]),
        ("Adjustable Ergonomic Office Chair, Black", ["office", "chair"]),
        ("HDMI Cable 6.5 ft", ["hdmi", "cable", "ft"]),
        ("", []),
    ],
)
def test_noun_tagger(title: str, nouns: list[str]) -> None:
    assert title_nouns(title) == nouns
