"""The shop: catalogue, goals, splits and search, built once per configuration and process.

Holds :class:`ShopConfig` (what catalogue to serve: generated with ``products`` and
``catalogue_seed``, or the original files of ``data_dir``), :class:`Shop` (product look-up,
cached BM25 search, goals by split, purchase scoring) and :func:`get_shop`, which builds each
configuration once per process (envs, the Flask app and the CLI share it) and loads the
generated catalogue and the search index from the disk cache when they are there.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from arlarena_envs.webshop.cache import cache_dir, cache_key, cached_pickle
from arlarena_envs.webshop.catalogue import (
    CATALOGUE_VERSION,
    DEFAULT_PRODUCTS,
    SMALL_PRODUCTS,
    generate_catalogue,
)
from arlarena_envs.webshop.goals import SPLITS, GoalSet, SyntheticGoals, split_goals
from arlarena_envs.webshop.original import DATA_ENV_VAR, find_original_files, load_original
from arlarena_envs.webshop.reward import DEFAULT_REWARD, RewardBreakdown, score_purchase
from arlarena_envs.webshop.schema import Goal, Product
from arlarena_envs.webshop.search import SearchIndex, load_index

__all__ = ["Shop", "ShopConfig", "get_shop"]


@dataclass(frozen=True)
class ShopConfig:
    """Which catalogue a shop serves.

    Attributes:
        products: catalogue size (generated: default :data:`DEFAULT_PRODUCTS`; original
            files: the first ``products`` distinct ASINs, default all).
        catalogue_seed: seed of the generated catalogue, its goals and the goal splits.
        data_dir: a folder with the original WebShop files; ``None`` reads
            ``$ARLARENA_WEBSHOP_DATA`` and generates the catalogue when that is unset too.
        human_goals: with original files, use the human instructions as goals.
    """

    products: int | None = None
    catalogue_seed: int = 0
    data_dir: str | None = None
    human_goals: bool = False

    def resolved(self) -> ShopConfig:
        """This config with ``data_dir`` filled from the environment and made absolute."""
        folder = self.data_dir or os.environ.get(DATA_ENV_VAR) or None
        if self.products is not None and self.products < 1:
            raise ValueError(f"products must be positive, got {self.products}")
        if folder is None and self.human_goals:
            raise ValueError("human_goals needs the original files (data_dir)")
        return replace(self, data_dir=str(Path(folder).resolve()) if folder else None)


class Shop:
    """A catalogue with its goals, goal splits and search index.

    Build through :func:`get_shop` to share one instance per configuration.
    """

    def __init__(
        self,
        config: ShopConfig,
        products: Sequence[Product],
        goals: GoalSet,
        index: SearchIndex,
    ) -> None:
        self.config = config
        self.products = products
        self.goals = goals
        self.index = index
        self.splits = split_goals(len(goals), config.catalogue_seed)
        self._by_asin = {p.asin.upper(): p for p in products}
        self._search = lru_cache(maxsize=4096)(self._search_uncached)

    def product(self, asin: str) -> Product | None:
        """The product with this ASIN (any case), or ``None``."""
        return self._by_asin.get(asin.upper())

    def search(self, query: str) -> list[Product]:
        """The top hits for ``query`` (at most 50), best first; repeated queries are cached."""
        return [self.products[i] for i in self._search(" ".join(query.lower().split()))]

    def _search_uncached(self, query: str) -> tuple[int, ...]:
        return tuple(self.index.search(query))

    def split_size(self, split: str) -> int:
        """How many goals ``split`` holds."""
        return len(self._split(split))

    def goal(self, split: str, index: int) -> Goal:
        """Goal ``index`` of ``split`` (wrapping around the split's size)."""
        members = self._split(split)
        if len(members) == 0:
            raise ValueError(f"split {split!r} has no goals")
        return self.goals[int(members[index % len(members)])]

    def _split(self, split: str) -> Sequence[int]:
        if split not in self.splits:
            raise ValueError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
        return self.splits[split]

    def score(
        self, goal: Goal, product: Product, options: Mapping[str, str],
        rule: str = DEFAULT_REWARD,
    ) -> RewardBreakdown:
        """The reward of buying ``product`` with ``options`` for ``goal`` (option ``rule``)."""
        return score_purchase(product, goal, options, rule=rule)

    def describe(self) -> dict[str, Any]:
        """Sizes and configuration, JSON-able (served at ``/api/shop``)."""
        return {
            "config": asdict(self.config),
            "products": len(self.products),
            "goals": len(self.goals),
            "splits": {name: len(members) for name, members in self.splits.items()},
            "categories": sorted({p.category for p in self.products}),
        }


def _build(config: ShopConfig) -> Shop:
    seed = config.catalogue_seed
    if config.data_dir:
        small = config.products is not None and config.products <= SMALL_PRODUCTS
        files = find_original_files(config.data_dir, small=small)
        products, goals = load_original(
            files, seed=seed, limit=config.products, human_goals=config.human_goals
        )
        source = files.products.stat()
        key = cache_key({
            "original": [str(files.products), source.st_size, source.st_mtime_ns],
            "products": config.products, "seed": seed,
        })
    else:
        size = config.products or DEFAULT_PRODUCTS
        key = cache_key({"generated": CATALOGUE_VERSION, "products": size, "seed": seed})
        products = cached_pickle(
            cache_dir() / f"catalogue-{key}.pickle", lambda: generate_catalogue(size, seed=seed)
        )
        goals = SyntheticGoals(products, seed=seed)
    index = load_index(key, lambda: [p.search_text() for p in products], cache_dir())
    return Shop(config, products, goals, index)


_SHOPS: dict[ShopConfig, Shop] = {}
_LOCK = threading.Lock()


def get_shop(config: ShopConfig | None = None) -> Shop:
    """The shared :class:`Shop` for ``config`` (built on first use in this process)."""
    config = (config or ShopConfig()).resolved()
    with _LOCK:
        if config not in _SHOPS:
            _SHOPS[config] = _build(config)
        return _SHOPS[config]
