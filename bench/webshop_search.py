"""WebShop search fidelity: ARLArena's bm25s ranking against a Lucene-style BM25 scorer.

Run ``python bench/webshop_search.py`` (default: the 1k shop, its 1000 eval goals). The
original searches with pyserini, i.e. Lucene's ``BM25Similarity(k1=0.9, b=0.4)`` over terms
of Anserini's default English analyzer. The peer here re-implements what Lucene does
differently from bm25s: document lengths stored lossily in one byte (``SmallFloat``:
exact up to 23 tokens, then 4 significant bits, so nearby lengths tie), float32 arithmetic,
ties by document order, and, with ``nltk`` installed, the Porter stemmer with Martin
Porter's own departures from the paper, which Lucene's ``PorterStemmer`` follows (without
nltk it uses PyStemmer's, as ARLArena does, and says so). Word breaks are ARLArena's
:func:`~arlarena_envs.webshop.search.analyze` on both sides.

Printed per query set (the eval goals' instructions, the expert's query = the target's
title): the mean top-10 overlap with the peer, the share of identical top-10 lists, and the
same for bm25s with its defaults (k1 1.5, b 0.75, no stemming) as ARLArena had it before.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TOP = 10


def _small_float_length(length: int) -> int:
    """The length Lucene's norms give back for ``length`` (``SmallFloat.intToByte4`` and
    ``byte4ToInt``: 24 exact values, then a float with a 4-bit mantissa, rounded down)."""
    free = 24
    if length < free:
        return length
    rest = length - free
    shift = max(rest.bit_length() - 4, 0)
    return ((rest >> shift) << shift) + free


def porter_stemmer() -> tuple[str, Callable[[list[str]], list[str]]]:
    """(name, stem) of the peer's Porter stemmer: Lucene's variant via nltk when installed."""
    try:
        from nltk.stem.porter import PorterStemmer
    except ImportError:
        import Stemmer

        return "PyStemmer porter (nltk not installed)", Stemmer.Stemmer("porter").stemWords
    stemmer = PorterStemmer(mode=PorterStemmer.MARTIN_EXTENSIONS)
    cache: dict[str, str] = {}

    def stem(words: list[str]) -> list[str]:
        return [cache.get(w) or cache.setdefault(w, stemmer.stem(w, to_lowercase=False))
                for w in words]

    return "nltk Porter with Martin Porter's extensions (Lucene's variant)", stem


class LuceneStyleBM25:
    """Lucene 8/9's BM25 scoring over pre-analysed documents (see the module docs)."""

    def __init__(self, docs: Sequence[list[str]], k1: float = 0.9, b: float = 0.4) -> None:
        postings: dict[str, list[tuple[int, int]]] = {}
        for doc, terms in enumerate(docs):
            for term, freq in Counter(terms).items():
                postings.setdefault(term, []).append((doc, freq))
        self.postings = {
            term: (np.array([d for d, _ in pairs]), np.array([f for _, f in pairs], np.float32))
            for term, pairs in postings.items()
        }
        self.size = len(docs)
        lengths = [len(terms) for terms in docs]
        avgdl = np.float32(sum(lengths) / self.size)
        decoded = np.array([_small_float_length(n) for n in lengths], dtype=np.float32)
        one = np.float32(1)
        self.norm_inverse = one / (np.float32(k1) * ((one - np.float32(b))
                                                     + np.float32(b) * decoded / avgdl))

    def search(self, terms: list[str], k: int = TOP) -> list[int]:
        scores = np.zeros(self.size, dtype=np.float64)
        for term, boost in Counter(terms).items():
            if term not in self.postings:
                continue
            docs, freqs = self.postings[term]
            n = len(docs)
            idf = np.float32(math.log(1 + (self.size - n + 0.5) / (n + 0.5)))
            weight = np.float32(boost) * idf
            part = weight - weight / (np.float32(1) + freqs * self.norm_inverse[docs])
            scores[docs] += part.astype(np.float32)
        scores = scores.astype(np.float32)
        hits = np.flatnonzero(scores > 0)
        order = np.lexsort((hits, -scores[hits]))
        return [int(d) for d in hits[order][:k]]


def overlap(ours: Callable[[str], list[int]], peer: Callable[[str], list[int]],
            queries: Sequence[str]) -> tuple[float, float]:
    """(mean share of the peer's top 10 that ours also has, share of identical top-10s)."""
    shared, same = 0.0, 0
    for query in queries:
        a, b = ours(query)[:TOP], peer(query)[:TOP]
        shared += len(set(a) & set(b)) / max(1, len(b))
        same += a == b
    return shared / len(queries), same / len(queries)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=1000)
    parser.add_argument("--split", default="eval")
    args = parser.parse_args(argv)

    from arlarena_envs.webshop.search import SearchIndex, analyze
    from arlarena_envs.webshop.shop import ShopConfig, get_shop

    shop = get_shop(ShopConfig(args.products))
    texts = [p.search_text() for p in shop.products]
    position = {p.asin: i for i, p in enumerate(shop.products)}
    stem_name, stem = porter_stemmer()
    peer = LuceneStyleBM25([stem(analyze(t)) for t in texts])
    old = SearchIndex.build_from_terms([analyze(t) for t in texts], k1=1.5, b=0.75)

    def ours(query: str) -> list[int]:
        return [position[p.asin] for p in shop.search(query)]

    def lucene(query: str) -> list[int]:
        return peer.search(stem(analyze(query)))

    def before(query: str) -> list[int]:
        return old.search_terms(analyze(query))

    goals = [shop.goal(args.split, i) for i in range(shop.split_size(args.split))]
    print(f"{len(shop.products)} products, {len(goals)} {args.split} goals; peer stemmer: "
          f"{stem_name}")
    print("queries | top-10 overlap | identical top-10 | bm25s defaults, no stemming (before)")
    for name, queries in (("instructions", [g.instruction for g in goals]),
                          ("target titles", [g.name for g in goals])):
        now, now_same = overlap(ours, lucene, queries)
        was, was_same = overlap(before, lucene, queries)
        print(f"{name:13s} | {now:6.1%} | {now_same:6.1%} | {was:6.1%} overlap, "
              f"{was_same:6.1%} identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
