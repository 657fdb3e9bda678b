"""The records of the shop: :class:`Product`, :class:`Review` and :class:`Goal`.

They mirror the fields the original WebShop keeps per product and per goal (see
``webshop.md``), whether the catalogue was generated or loaded from the original files, and turn
to and from plain JSON-able dicts (:meth:`Product.to_dict`, :meth:`Goal.to_dict`) for the HTTP
API and for byte-level reproducibility checks.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["NO_PRICE_BOUND", "Goal", "Product", "Review", "format_price", "price_tag"]

NO_PRICE_BOUND = None
"""``Goal.price_upper`` when the goal states no price bound."""


def format_price(price: float) -> str:
    """``$12.99``: how prices are shown on the pages."""
    return f"${price:.2f}"


_NOT_NUMBER = re.compile(r"[^0-9.]")


def price_tag(pricing: str) -> str:
    """The price as the original's pages show it: each dollar amount as a Python float,
    ``"$a to $b"`` for a range, ``"$100.0"`` when there is none.

    >>> price_tag("$12.99"), price_tag("$10.99 - $24.90"), price_tag("")
    ('$12.99', '$10.99 to $24.9', '$100.0')
    """
    amounts = []
    for piece in pricing.split("$")[1:]:
        try:
            amounts.append(float(_NOT_NUMBER.sub("", piece)))
        except ValueError:
            continue
    if not amounts:
        return "$100.0"
    if len(amounts) == 1:
        return f"${amounts[0]}"
    return f"${amounts[0]} to ${amounts[1]}"


@dataclass(frozen=True)
class Review:
    """One customer review: star score (1–5), title and body."""

    score: int
    title: str
    body: str


@dataclass(frozen=True, eq=False)
class Product:
    """One listing, with WebShop's product fields.

    Attributes:
        asin: the product id (≤ 10 characters, upper-case, unique in a catalogue).
        title: WebShop's ``name`` / ``Title``.
        category: the broad category (``beauty``, ``electronics`` …).
        query: the lower-case search query the product was listed under.
        product_category: the breadcrumb, levels joined by ``" › "``.
        description: the full description.
        bullets: the bullet features (``small_description``).
        pricing: the listed price, ``"$12.99"`` or a range ``"$10.99 - $24.99"``.
        price: the price charged: the listed one, or one drawn from the range (seeded).
        options: option name → values (lower-case), in listing order.
        attributes: the mined attributes (``"long lasting"`` …).
        rating: the average star rating as text, or ``"N.A."``.
        reviews: the customer reviews.
    """

    asin: str
    title: str
    category: str
    query: str
    product_category: str
    description: str
    bullets: tuple[str, ...]
    pricing: str
    price: float
    options: dict[str, tuple[str, ...]] = field(default_factory=dict)
    attributes: tuple[str, ...] = ()
    rating: str = "N.A."
    reviews: tuple[Review, ...] = ()

    @property
    def price_tag(self) -> str:
        """The listed price as the original's pages show it (:func:`price_tag`)."""
        return price_tag(self.pricing)

    def option_of(self, value: str) -> str | None:
        """The option name that has ``value`` (the first one in listing order), or ``None``."""
        for name, values in self.options.items():
            if value in values:
                return name
        return None

    def search_text(self) -> str:
        """What the search engine indexes: title, description, first bullet and option text."""
        options = ", and ".join(f"{name}: {', '.join(vals)}" for name, vals in self.options.items())
        first_bullet = self.bullets[0] if self.bullets else ""
        return " ".join((self.title, self.description, first_bullet, options)).lower()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict of every field."""
        data = asdict(self)
        data["options"] = {name: list(vals) for name, vals in self.options.items()}
        return data


@dataclass(frozen=True)
class Goal:
    """One shopping instruction and what a purchase must match.

    Attributes:
        index: the goal's position in its goal set.
        asin: the target product.
        category: the target's broad category (the env's ``task_type``).
        query: the target's search query (the product type).
        name: the target's title (for the type match of the reward).
        product_category: the target's breadcrumb.
        instruction: the instruction text shown to the agent.
        attributes: the attributes the purchase must have.
        options: the ``(option name, value)`` pairs the purchase must select; the name may be
            ``""`` where the source only gives values (the original human goals).
        price_upper: the price bound in dollars, or :data:`NO_PRICE_BOUND`.
        weight: sampling weight (rarer attributes weigh more).
    """

    index: int
    asin: str
    category: str
    query: str
    name: str
    product_category: str
    instruction: str
    attributes: tuple[str, ...]
    options: tuple[tuple[str, str], ...]
    price_upper: float | None
    weight: float = 1.0

    @property
    def option_values(self) -> tuple[str, ...]:
        """The required option values, in order."""
        return tuple(value for _, value in self.options)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict of every field (options as a list of ``[name, value]`` pairs)."""
        data = asdict(self)
        data["attributes"] = list(self.attributes)
        data["options"] = [list(pair) for pair in self.options]
        return data
