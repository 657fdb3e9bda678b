"""The generated catalogue and goals (schema, determinism, splits) and the original-file loader."""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from arlarena_envs.webshop.catalogue import (
    DEFAULT_PRODUCTS,
    MAX_COMBINATIONS,
    SMALL_PRODUCTS,
    generate_catalogue,
)
from arlarena_envs.webshop.goals import SyntheticGoals, price_bound, split_goals
from arlarena_envs.webshop.original import find_original_files, load_original
from arlarena_envs.webshop.reward import normalize_color, score_purchase
from arlarena_envs.webshop.schema import Goal, Product

_DIGEST_SCRIPT = """
import hashlib, json
from arlarena_envs.webshop.catalogue import generate_catalogue
from arlarena_envs.webshop.goals import SyntheticGoals
products = generate_catalogue(300, seed=7)
goals = SyntheticGoals(products, seed=7)
records = [p.to_dict() for p in products]
records += [goals[i].to_dict() for i in range(0, len(goals), 7)]
blob = json.dumps(records)
print(hashlib.sha256(blob.encode()).hexdigest())
"""


def _digest(products: list[Product], goals: SyntheticGoals) -> str:
    records = [p.to_dict() for p in products] + [
        goals[i].to_dict() for i in range(0, len(goals), 7)
    ]
    return hashlib.sha256(json.dumps(records).encode()).hexdigest()


@pytest.fixture(scope="module")
def small() -> list[Product]:
    return generate_catalogue(SMALL_PRODUCTS)


def test_same_seed_gives_byte_identical_catalogue_in_another_process() -> None:
    products = generate_catalogue(300, seed=7)
    here = _digest(products, SyntheticGoals(products, seed=7))
    assert here == _digest(generate_catalogue(300, seed=7), SyntheticGoals(products, seed=7))
    env = {**os.environ, "PYTHONHASHSEED": "12345"}  # str hashing differs; output must not
    there = subprocess.run(
        [sys.executable, "-c", _DIGEST_SCRIPT], env=env, capture_output=True, text=True,
        check=True, timeout=120,
    ).stdout.strip()
    assert there == here


def test_seeds_differ_and_smaller_catalogues_are_prefixes() -> None:
    assert [p.title for p in generate_catalogue(50, seed=1)] != [
        p.title for p in generate_catalogue(50, seed=2)
    ]
    big = generate_catalogue(120, seed=3)
    assert [p.to_dict() for p in generate_catalogue(60, seed=3)] == [
        p.to_dict() for p in big[:60]
    ]


def test_schema_of_generated_products(small: list[Product]) -> None:
    asins = [p.asin for p in small]
    assert len(set(asins)) == len(asins)
    assert all(re.fullmatch(r"B0[0-9A-Z]{8}", a) for a in asins)
    assert len({p.category for p in small}) >= 5
    assert len({p.query for p in small}) >= 40
    for product in small:
        assert product.title and product.description and product.bullets
        assert len(product.product_category.split(" › ")) >= 3
        assert re.fullmatch(r"\$\d+\.\d\d( - \$\d+\.\d\d)?", product.pricing)
        low, *high = (float(x) for x in re.findall(r"[\d.]+", product.pricing))
        assert low <= product.price <= (high[0] if high else low)
        assert 2 <= len(product.attributes) <= 5
        for name, values in product.options.items():
            assert name == name.lower() and values
            assert all(v == v.lower() and "/" not in v for v in values)
        assert math.prod(len(v) for v in product.options.values()) <= MAX_COMBINATIONS
        assert product.rating == "N.A." or 1.0 <= float(product.rating) <= 5.0
        assert all(1 <= r.score <= 5 and r.title and r.body for r in product.reviews)


def test_sizes_match_the_study_and_the_default_is_big_enough(small: list[Product]) -> None:
    assert DEFAULT_PRODUCTS >= 10_000 and SMALL_PRODUCTS == 1_000
    goals = SyntheticGoals(small)
    assert len(goals) == sum(math.prod(len(v) for v in p.options.values()) for p in small)
    assert 5_000 <= len(goals) <= 9_000  # the study: 6,910 goals from 1,000 products


def test_goals_enumerate_option_combinations_and_fit_their_product(small: list[Product]) -> None:
    goals = SyntheticGoals(small)
    by_asin = {p.asin: p for p in small}
    first = small[0]
    combos = {g.options for g in goals[: math.prod(len(v) for v in first.options.values())]}
    assert len(combos) == math.prod(len(v) for v in first.options.values())
    for index in random.Random(0).sample(range(len(goals)), 300):
        goal = goals[index]
        product = by_asin[goal.asin]
        assert goal.index == index and goal.name == product.title
        assert set(goal.attributes) <= set(product.attributes) and goal.attributes
        assert [name for name, _ in goal.options] == list(product.options)
        assert all(value in product.options[name] for name, value in goal.options)
        if goal.price_upper is not None:
            assert goal.price_upper > product.price
            bound = f", and price lower than {goal.price_upper:.2f} dollars"
            assert goal.instruction.endswith(bound)
        assert goal.query in goal.instruction and goal.instruction == goal.instruction.lower()
        # The target bought with the goal's options is a full match for upstream's finer
        # rule, and for the study's unless a value holds a colour word (its quirk).
        assert score_purchase(product, goal, dict(goal.options), rule="finer").score == 1.0
        if all(normalize_color(value) == value for value in goal.option_values):
            assert score_purchase(product, goal, dict(goal.options)).score == 1.0
    with pytest.raises(IndexError):
        goals[len(goals)]


def test_price_bound_rule() -> None:
    for seed in range(20):
        rng = random.Random(seed)
        assert price_bound(rng, 12.5) in (30.0, 40.0, 50.0)  # max of 2 of {20, 30, 40, 50}
        assert price_bound(rng, 20.0) in (40.0, 50.0, 60.0)  # strictly above the price
        assert price_bound(rng, 975.0) == 990.0  # only 980 and 990 are left
        assert price_bound(rng, 985.0) is None  # one step left: no bound


def test_splits_are_disjoint_seeded_and_cover_all_goals() -> None:
    splits = split_goals(7_000, seed=0)
    sizes = {name: len(members) for name, members in splits.items()}
    assert sizes == {"train": 5_500, "eval": 1_000, "test": 500}
    members = [set(m.tolist()) for m in splits.values()]
    assert set().union(*members) == set(range(7_000))
    assert sum(len(m) for m in members) == 7_000
    again = split_goals(7_000, seed=0)
    assert all((again[k] == splits[k]).all() for k in splits)
    assert not (split_goals(7_000, seed=1)["eval"] == splits["eval"]).all()
    assert {k: len(v) for k, v in split_goals(300).items()} == {"train": 210, "eval": 60,
                                                                "test": 30}


# -- the original files --------------------------------------------------------------------------
def _write_original(folder: Path) -> None:
    products = [
        {
            "asin": "B07ORIG001",
            "category": "beauty",
            "query": "Shampoo",
            "name": "Aqua Hair Shampoo, Long Lasting",
            "product_category": "Beauty & Personal Care › Hair Care › Shampoos",
            "full_description": "Gentle shampoo.",
            "small_description": ["Sulfate free formula", "Made in Italy"],
            "pricing": "$10.00 - $20.00",
            "images": [],
            "customization_options": {
                "Size": [{"value": "8 Fl Oz", "image": None}, {"value": "16 Fl Oz", "image": None}],
                "Color": [{"value": "Black/White", "image": None}],
            },
        },
        {
            "asin": "B07ORIG002",
            "category": "beauty",
            "query": "lipstick",
            "name": "Rosa Matte Lipstick",
            "product_category": "Beauty & Personal Care › Makeup › Lips",
            "full_description": "A lipstick.",
            "small_description": ["Lasts all day"],
            "pricing": "",
            "customization_options": None,
        },
        {"asin": "B07ORIG001", "name": "duplicate that must be dropped", "pricing": "$1.00"},
        {
            "asin": "B07ORIG003",
            "category": "grocery",
            "query": "tea",
            "name": "Mori Green Tea",
            "product_category": "Grocery & Gourmet Food › Beverages › Tea",
            "full_description": "Tea.",
            "small_description": [],
            "pricing": "$1,234.50",
            "customization_options": {"Flavor Name": [{"value": "Mint"}, {"value": "Lemon"}]},
        },
    ]
    attributes = {
        "B07ORIG001": {"attributes": ["long lasting", "sulfate free"]},
        "B07ORIG002": {"attributes": ["long lasting"]},
    }
    human = {
        "B07ORIG001": [
            {
                "asin": "B07ORIG001",
                "instruction": "i want a long lasting shampoo in 16 fl oz",
                "instruction_attributes": ["long lasting"],
                "instruction_options": ["16 fl oz"],
            }
        ],
        "B07ORIG002": [{"instruction": "a matte lipstick please", "instruction_attributes": []}],
    }
    (folder / "items_shuffle_1000.json").write_text(json.dumps(products))
    (folder / "items_ins_v2_1000.json").write_text(json.dumps(attributes))
    (folder / "items_human_ins.json").write_text(json.dumps(human))


def test_loader_converts_the_original_format(tmp_path: Path) -> None:
    _write_original(tmp_path)
    files = find_original_files(tmp_path, small=True)
    assert files.products.name == "items_shuffle_1000.json"
    products, goals = load_original(files, seed=0)
    assert [p.asin for p in products] == ["B07ORIG001", "B07ORIG002", "B07ORIG003"]
    shampoo, lipstick, tea = products
    assert shampoo.options == {"size": ("8 fl oz", "16 fl oz"), "color": ("black | white",)}
    assert shampoo.query == "shampoo" and shampoo.attributes == ("long lasting", "sulfate free")
    assert 10.0 <= shampoo.price <= 20.0
    assert shampoo.price == load_original(files, seed=0)[0][0].price  # seeded draw
    assert lipstick.price == 100.0 and lipstick.pricing == "$100.00" and lipstick.options == {}
    assert tea.price == 1234.5 and tea.attributes == ()
    # Synthetic goals: every option combination of the products with mined attributes.
    assert len(goals) == 2 + 1
    assert {g.asin for g in goals} == {"B07ORIG001", "B07ORIG002"}
    first = goals[0]
    assert first.options == (("size", "8 fl oz"), ("color", "black | white"))
    assert score_purchase(shampoo, first, dict(first.options)).score == 1.0


def test_loader_reads_human_instructions(tmp_path: Path) -> None:
    _write_original(tmp_path)
    products, goals = load_original(find_original_files(tmp_path), human_goals=True)
    assert len(goals) == 2
    goal: Goal = goals[0]
    assert goal.asin == "B07ORIG001" and goal.attributes == ("long lasting",)
    assert goal.option_values == ("16 fl oz",)
    assert goal.instruction.startswith("i want a long lasting shampoo in 16 fl oz, and price lower")
    assert score_purchase(products[0], goal, {"size": "16 fl oz"}).score == 1.0
    assert load_original(find_original_files(tmp_path), limit=1)[0][0].asin == "B07ORIG001"


def test_loader_reports_missing_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        find_original_files(tmp_path)
