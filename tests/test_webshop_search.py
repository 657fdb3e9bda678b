"""BM25 search: Lucene's analysis and pyserini's k1 / b, ranking, determinism, the on-disk and
in-process caches (versioned), the shop's search."""

from __future__ import annotations

from pathlib import Path

import pytest

from arlarena_envs.webshop import search
from arlarena_envs.webshop.cache import cached_pickle
from arlarena_envs.webshop.catalogue import SMALL_PRODUCTS, generate_catalogue
from arlarena_envs.webshop.search import (
    INDEX_VERSION,
    SEARCH_RETURN_N,
    SearchIndex,
    analyze,
    load_index,
    tokenize,
)
from arlarena_envs.webshop.shop import ShopConfig, get_shop

DOCS = [
    "red cotton t-shirt for men",
    "blue jeans",
    "red wine glass set",
    "red red red shampoo",
    "long lasting shampoo 16.9 fl oz",
    "red cotton t-shirt for men",  # a duplicate of document 0: ties keep catalogue order
]


def test_analysis_follows_lucenes_standard_english_chain() -> None:
    # Lucene's tokenizer keeps "i'm", "6.76" and "1,000" whole, splits at "-"; the possessive
    # filter cuts "'s"; only Lucene's 33 stop words go ("i", "need", "looking" stay).
    assert analyze("I'm looking for a 6.76 FL OZ bottle, and X-Large") == [
        "i'm", "looking", "6.76", "fl", "oz", "bottle", "x", "large",
    ]
    assert analyze("Men's 1,000-count B0ABC12 such") == ["men", "1,000", "count", "b0abc12"]
    assert tokenize("I'm looking for a 6.76 FL OZ bottle, and X-Large") == [
        "i'm", "look", "6.76", "fl", "oz", "bottl", "x", "larg",
    ]
    assert tokenize("") == [] and tokenize("the and of") == []
    assert tokenize("Shampoos") == tokenize("shampoo")  # Porter stems


def test_pyserinis_k1_and_b_rank_a_long_frequent_match_first() -> None:
    # Query "red": A has it 3 times in 12 words, B once in 2. Worked by hand with
    # tf / (tf + k1 (1 - b + b dl / avgdl)), avgdl 7: k1 0.9, b 0.4 gives A 0.722, B 0.609;
    # bm25s's defaults k1 1.5, b 0.75 give A 0.566, B 0.590.
    docs = ["red red red alpha bravo charlie delta echo foxtrot golf hotel india", "red blue"]
    assert SearchIndex.build(docs).search("red") == [0, 1]
    defaults = SearchIndex.build_from_terms([tokenize(d) for d in docs], k1=1.5, b=0.75)
    assert defaults.search_terms(["red"]) == [1, 0]


def test_ranking_ties_and_limits() -> None:
    index = SearchIndex.build(DOCS)
    assert index.size == len(DOCS)
    hits = index.search("red cotton t-shirt")
    assert hits[:2] == [0, 5]  # equal scores: lower index first
    assert set(hits) == {0, 2, 3, 5}  # only documents that share a token
    assert index.search("shampoo 16.9 fl oz")[0] == 4
    assert index.search("red", k=2) == [3, 2]  # then the shortest of 0, 2 and 5
    assert index.search("red", k=4) == [3, 2, 0, 5]  # 0 and 5 tie: catalogue order
    assert index.search("zzz unknown words") == []
    assert index.search("") == [] and index.search("red", k=0) == []


def test_index_is_built_once_then_loaded_from_disk(tmp_path: Path) -> None:
    builds: list[int] = []

    def texts() -> list[str]:
        builds.append(1)
        return DOCS

    first = load_index("unit-test-key", texts, tmp_path)
    assert load_index("unit-test-key", texts, tmp_path) is first  # in-process cache
    assert len(builds) == 1
    saved = list(tmp_path.glob("index-*unit-test-key"))
    assert len(saved) == 1 and (saved[0] / "params.index.json").exists()
    search._LOADED.clear()  # a new process: only the disk cache is left
    reloaded = load_index("unit-test-key", texts, tmp_path)
    assert len(builds) == 1 and reloaded is not first
    for query in ("red cotton t-shirt", "shampoo", "blue"):
        assert reloaded.search(query) == first.search(query)
    assert not [p for p in tmp_path.iterdir() if p.name != saved[0].name]  # no staging left


def test_an_index_of_an_older_version_is_not_reused(tmp_path: Path) -> None:
    stale = tmp_path / f"index-v{INDEX_VERSION - 1}-versioned-key"
    stale.mkdir()
    (stale / "params.index.json").write_text("{}")  # what an old build left
    index = load_index("versioned-key", lambda: DOCS, tmp_path)
    assert index.size == len(DOCS)
    assert (tmp_path / f"index-v{INDEX_VERSION}-versioned-key" / "params.index.json").exists()


def test_pickle_cache_builds_once_and_rebuilds_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "catalogue-test.pickle"
    built = cached_pickle(path, lambda: generate_catalogue(5))
    assert path.exists() and len(built) == 5
    loaded = cached_pickle(path, lambda: pytest.fail("should load from the file"))
    assert [p.to_dict() for p in loaded] == [p.to_dict() for p in generate_catalogue(5)]
    path.write_bytes(b"not a pickle")
    assert cached_pickle(path, lambda: ["rebuilt"]) == ["rebuilt"]
    assert cached_pickle(path, list) == ["rebuilt"]


def test_shop_search_is_top_50_cached_and_case_insensitive() -> None:
    shop = get_shop(ShopConfig(SMALL_PRODUCTS))
    hits = shop.search("long lasting shampoo")
    assert len(hits) == SEARCH_RETURN_N
    shampoos = {p.asin for p in shop.products if p.query == "shampoo"}
    assert shampoos <= {p.asin for p in hits}  # every shampoo makes the top 50
    assert hits[0].query == "shampoo" and "long lasting" in hits[0].search_text()
    assert shop.search("  LONG   lasting Shampoo ") == hits
    assert shop.product(hits[0].asin.lower()) is hits[0]
    assert shop.product("B0NOSUCH00") is None


def test_unknown_split_is_a_clear_error() -> None:
    shop = get_shop(ShopConfig(SMALL_PRODUCTS))
    with pytest.raises(ValueError, match="unknown split"):
        shop.goal("validation", 0)
