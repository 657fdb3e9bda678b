"""Shopping goals: one per option combination of a product, their instructions, and splits.

Holds :class:`GoalSet` (a read-only sequence of :class:`~arlarena_envs.webshop.schema.Goal`),
its two kinds — :class:`SyntheticGoals` (WebShop's synthetic goals: every combination of a
product's option values is one goal, built lazily from its index so 100k products cost no
memory) and :class:`ListGoals` (an explicit list, e.g. the original human instructions) — and
the helpers they share: :func:`price_bound` (WebShop's price rule), :func:`compose_instruction`
(instructions in WebShop's human style, e.g. "i need a long lasting 6.76 fl oz bottle …, and
price lower than 100.00 dollars") and :func:`split_goals` (disjoint test / eval / train sets
after a seeded shuffle, as in the WebShop baselines: 500 / 1000 / the rest).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from typing import overload

import numpy as np

from arlarena_envs.webshop.schema import NO_PRICE_BOUND, Goal, Product

__all__ = [
    "SPLITS",
    "GoalSet",
    "ListGoals",
    "SyntheticGoals",
    "compose_instruction",
    "price_bound",
    "split_goals",
]

SPLITS = ("train", "eval", "test")
"""The goal splits an env can draw from."""

_PRICE_STEPS = tuple(range(10, 1000, 10))


def price_bound(rng: random.Random, price: float) -> float | None:
    """WebShop's bound: of the first four of 10, 20 … 990 above ``price``, the larger of two drawn.

    ``None`` (no bound) when fewer than two steps lie above the price.
    """
    above = [step for step in _PRICE_STEPS if step > price][:4]
    if len(above) < 2:
        return NO_PRICE_BOUND
    return float(max(rng.sample(above, 2)))


def _article(phrase: str) -> str:
    last = phrase.rsplit(" ", 1)[-1]
    if last.endswith("s") and not last.endswith("ss"):
        return ""
    return "an " if phrase[:1] in "aeiou" else "a "


def _and_join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _option_phrase(rng: random.Random, name: str, value: str) -> str:
    if name == "color":
        return rng.choice((f"in {value}", f"in {value} color"))
    if name == "size":
        return f"in {value}" if any(c.isdigit() for c in value) else f"in size {value}"
    if name == "scent":
        return rng.choice((f"with {value} scent", f"in {value} scent"))
    if name == "flavor name":
        return f"in {value} flavor"
    if name == "capacity":
        return f"with {value} capacity"
    if name == "style":
        return f"in {value} style"
    if name == "material":
        return f"made of {value}"
    if name == "pattern name":
        return f"with {value} pattern"
    return f"in {value}"


def compose_instruction(
    rng: random.Random,
    query: str,
    attributes: Sequence[str],
    options: Sequence[tuple[str, str]],
    price_upper: float | None,
) -> str:
    """A lower-case instruction naming the product type, attributes, options and price bound."""
    attrs = _and_join(list(attributes))
    style = rng.randrange(5)
    if style == 0:
        head = f"find me {attrs} {query}".replace("  ", " ")
        opts = ", and ".join(f"{name}: {value}" for name, value in options)
        text = f"{head} with {opts}" if opts else head
    else:
        opts = ", ".join(_option_phrase(rng, name, value) for name, value in options)
        thing = f"{attrs} {query}".strip()
        if style == 1:
            text = f"i need {_article(thing)}{thing}"
        elif style == 2:
            text = f"i'm looking for {_article(query)}{query} that is {attrs}"
        elif style == 3:
            text = f"i want to buy {_article(thing)}{thing}"
        else:
            text = f"can you get me {_article(thing)}{thing}"
        if opts:
            text = f"{text} {opts}"
    if price_upper is not None:
        text += f", and price lower than {price_upper:.2f} dollars"
    return " ".join(text.split())


class GoalSet(Sequence[Goal]):
    """A read-only sequence of goals (subclasses implement ``__len__`` and ``_goal``)."""

    def _goal(self, index: int) -> Goal:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> Goal: ...
    @overload
    def __getitem__(self, index: slice) -> list[Goal]: ...
    def __getitem__(self, index: int | slice) -> Goal | list[Goal]:
        if isinstance(index, slice):
            return [self._goal(i) for i in range(*index.indices(len(self)))]
        size = len(self)
        if not -size <= index < size:
            raise IndexError(f"goal index {index} out of range for {size} goals")
        return self._goal(index % size)


class ListGoals(GoalSet):
    """Goals given as a list (e.g. loaded from the original human-instruction file)."""

    def __init__(self, goals: Sequence[Goal]) -> None:
        self._goals = list(goals)

    def __len__(self) -> int:
        return len(self._goals)

    def _goal(self, index: int) -> Goal:
        return self._goals[index]


class SyntheticGoals(GoalSet):
    """One goal per combination of option values of every product that has attributes.

    Goal ``i`` is built on demand from ``(seed, i)``: the product and combination come from
    cumulative counts, the required attributes (1–3 of the product's), price bound and
    instruction wording from a ``random.Random`` seeded with a string.

    >>> from arlarena_envs.webshop.catalogue import generate_catalogue
    >>> goals = SyntheticGoals(generate_catalogue(20), seed=0)
    >>> goals[0].instruction == SyntheticGoals(generate_catalogue(20), seed=0)[0].instruction
    True
    """

    def __init__(self, products: Sequence[Product], seed: int = 0) -> None:
        self.products = products
        self.seed = seed
        eligible = [i for i, p in enumerate(products) if p.attributes]
        counts = [math.prod(len(v) for v in products[i].options.values()) for i in eligible]
        self._eligible = np.asarray(eligible, dtype=np.int64)
        self._ends = np.cumsum(np.asarray(counts, dtype=np.int64))
        self._rarity = self._attribute_rarity(products)

    @staticmethod
    def _attribute_rarity(products: Sequence[Product]) -> dict[tuple[str, str], float]:
        per_category = Counter(p.category for p in products)
        counts = Counter((p.category, a) for p in products for a in p.attributes)
        return {key: math.log(per_category[key[0]] / n) + 1.0 for key, n in counts.items()}

    def __len__(self) -> int:
        return int(self._ends[-1]) if len(self._ends) else 0

    def _goal(self, index: int) -> Goal:
        slot = int(np.searchsorted(self._ends, index, side="right"))
        product = self.products[int(self._eligible[slot])]
        combo = index - (int(self._ends[slot - 1]) if slot else 0)
        chosen: list[tuple[str, str]] = []
        for name, values in reversed(product.options.items()):
            combo, digit = divmod(combo, len(values))
            chosen.append((name, values[digit]))
        options = tuple(reversed(chosen))
        rng = random.Random(f"arlarena-webshop:{self.seed}:goal:{index}")
        count = min(len(product.attributes), rng.choice((1, 2, 2, 3)))
        attributes = tuple(rng.sample(product.attributes, count))
        upper = price_bound(rng, product.price)
        weight = sum(self._rarity[(product.category, a)] for a in attributes) / len(attributes)
        return Goal(
            index=index,
            asin=product.asin,
            category=product.category,
            query=product.query,
            name=product.title,
            product_category=product.product_category,
            instruction=compose_instruction(rng, product.query, attributes, options, upper),
            attributes=attributes,
            options=options,
            price_upper=upper,
            weight=weight,
        )


def split_goals(count: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Disjoint goal indices per split after a seeded shuffle: test, eval, then train.

    Test and eval take 500 and 1000 goals (as the WebShop baselines do), or 10 % and 20 % of
    a goal set smaller than 5,000 goals.

    >>> {k: len(v) for k, v in split_goals(7000).items()}
    {'train': 5500, 'eval': 1000, 'test': 500}
    """
    order = np.random.default_rng([seed, 2022]).permutation(count)
    n_test = min(500, count // 10)
    n_eval = min(1000, count // 5)
    return {
        "train": order[n_test + n_eval :],
        "eval": order[n_test : n_test + n_eval],
        "test": order[:n_test],
    }
