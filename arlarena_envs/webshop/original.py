"""Load the original WebShop data files when a user has them.

Holds :func:`find_original_files` (which files of a folder to use) and :func:`load_original`
(products from ``items_shuffle*.json``, their mined attributes from ``items_ins_v2*.json``, and
optionally the human instructions of ``items_human_ins.json``), converted to this package's
:class:`~arlarena_envs.webshop.schema.Product` and goal records the way the original loader
does: option names and values lower-cased with "/" written " | ", duplicate ASINs dropped, a
price range drawn from uniformly (seeded per product), a missing price read as $100.00, and
the price bound appended to human instructions. Set the folder with the ``data_dir`` argument
of the env / CLI or the ``ARLARENA_WEBSHOP_DATA`` environment variable.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arlarena_envs.webshop.goals import GoalSet, ListGoals, SyntheticGoals, price_bound
from arlarena_envs.webshop.schema import Goal, Product, Review, format_price

__all__ = ["DATA_ENV_VAR", "OriginalFiles", "find_original_files", "load_original"]

DATA_ENV_VAR = "ARLARENA_WEBSHOP_DATA"
"""Environment variable naming a folder with the original WebShop files."""

_PRICE = re.compile(r"\$\s*([0-9][0-9,]*(?:\.[0-9]+)?)")


@dataclass(frozen=True)
class OriginalFiles:
    """The original files to load: products, attributes and (optional) human instructions."""

    products: Path
    attributes: Path | None
    human: Path | None


def _pick(folder: Path, stem: str, small: bool) -> Path | None:
    found = sorted(folder.glob(f"{stem}*.json"))
    if not found:
        return None
    smalls = [p for p in found if "1000" in p.stem]
    larges = [p for p in found if p not in smalls]
    ordered = (smalls + larges) if small else (larges + smalls)
    return ordered[0]


def find_original_files(folder: str | os.PathLike[str], small: bool = False) -> OriginalFiles:
    """The files of ``folder`` to load; ``small`` prefers the ``*_1000.json`` variants."""
    root = Path(folder)
    products = _pick(root, "items_shuffle", small)
    if products is None:
        raise FileNotFoundError(f"no items_shuffle*.json in {root}")
    human = root / "items_human_ins.json"
    return OriginalFiles(
        products=products,
        attributes=_pick(root, "items_ins_v2", small),
        human=human if human.exists() else None,
    )


def _values(contents: Any) -> tuple[str, ...]:
    values: list[str] = []
    for entry in contents if isinstance(contents, list) else []:
        raw = entry.get("value") if isinstance(entry, Mapping) else entry
        if isinstance(raw, str):
            value = raw.strip().replace("/", " | ").lower()
            if value and value not in values:
                values.append(value)
    return tuple(values)


def _reviews(raw: Any) -> tuple[Review, ...]:
    reviews = []
    for entry in raw if isinstance(raw, list) else []:
        if not isinstance(entry, Mapping):
            continue
        try:
            score = int(float(entry.get("score", entry.get("rating", 0)) or 0))
        except (TypeError, ValueError):
            score = 0
        body = str(entry.get("body", entry.get("review", "")) or "")
        reviews.append(Review(score, str(entry.get("title", "") or ""), body))
    return tuple(reviews)


def _product(raw: Mapping[str, Any], attributes: Iterable[str], seed: int) -> Product:
    asin = str(raw["asin"])
    pricing = str(raw.get("pricing") or "")
    prices = [float(p.replace(",", "")) for p in _PRICE.findall(pricing)][:2]
    if not prices:
        pricing, price = format_price(100.0), 100.0
    elif len(prices) == 1 or prices[0] == prices[1]:
        price = prices[0]
    else:
        low, high = sorted(prices)
        price = round(random.Random(f"arlarena-webshop:{seed}:price:{asin}").uniform(low, high), 2)
    options: dict[str, tuple[str, ...]] = {}
    for name, contents in (raw.get("customization_options") or {}).items():
        values = _values(contents)
        if values:
            options[str(name).strip().lower()] = values
    bullets = raw.get("small_description") or []
    rating = raw.get("Rating", raw.get("average_rating"))
    return Product(
        asin=asin,
        title=str(raw.get("name") or raw.get("Title") or ""),
        category=str(raw.get("category") or ""),
        query=str(raw.get("query") or "").lower().strip(),
        product_category=str(raw.get("product_category") or ""),
        description=str(raw.get("full_description") or raw.get("Description") or ""),
        bullets=tuple(str(b) for b in (bullets if isinstance(bullets, list) else [bullets])),
        pricing=pricing,
        price=price,
        options=options,
        attributes=tuple(str(a) for a in attributes),
        rating=str(rating) if rating not in (None, "") else "N.A.",
        reviews=_reviews(raw.get("Reviews")),
    )


def _read(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def _human_goals(products: list[Product], raw: Mapping[str, Any], seed: int) -> list[Goal]:
    goals: list[Goal] = []
    for product in products:
        for entry in raw.get(product.asin) or []:
            if not isinstance(entry, Mapping) or not entry.get("instruction"):
                continue
            rng = random.Random(f"arlarena-webshop:{seed}:human:{len(goals)}")
            upper = price_bound(rng, product.price)
            text = " ".join(str(entry["instruction"]).split())
            if upper is not None:
                text += f", and price lower than {upper:.2f} dollars"
            goals.append(
                Goal(
                    index=len(goals),
                    asin=product.asin,
                    category=product.category,
                    query=product.query,
                    name=product.title,
                    product_category=product.product_category,
                    instruction=text,
                    attributes=tuple(map(str, entry.get("instruction_attributes") or ())),
                    options=tuple(("", str(v)) for v in entry.get("instruction_options") or ()),
                    price_upper=upper,
                )
            )
    return goals


def load_original(
    files: OriginalFiles,
    *,
    seed: int = 0,
    limit: int | None = None,
    human_goals: bool = False,
) -> tuple[list[Product], GoalSet]:
    """Products (the first ``limit`` distinct ASINs) and goals from the original files.

    Goals are WebShop's synthetic ones (every option combination of every product with mined
    attributes) or, with ``human_goals``, the human instructions.
    """
    raw_products = _read(files.products)
    if not isinstance(raw_products, list):
        raise ValueError(f"{files.products} should hold a JSON list of products")
    mined = _read(files.attributes) if files.attributes else {}
    products: list[Product] = []
    seen: set[str] = set()
    for raw in raw_products:
        if not isinstance(raw, Mapping) or not raw.get("asin") or raw["asin"] in seen:
            continue
        seen.add(raw["asin"])
        attributes = (mined.get(raw["asin"]) or {}).get("attributes") or ()
        products.append(_product(raw, attributes, seed))
        if limit is not None and len(products) >= limit:
            break
    if human_goals:
        if files.human is None:
            raise FileNotFoundError("human_goals needs items_human_ins.json beside the products")
        return products, ListGoals(_human_goals(products, _read(files.human), seed))
    return products, SyntheticGoals(products, seed=seed)
