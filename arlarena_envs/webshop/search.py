"""BM25 product search (``bm25s``) set up as the original's pyserini index, cached on disk.

The original ranks with Lucene's BM25 through pyserini's defaults: k1 0.9, b 0.4, and
Anserini's default English analyzer (Lucene's standard tokenizer, the possessive "'s" removed,
lower case, Lucene's 33 English stop words, Porter stemming). :func:`tokenize` follows that
chain: word breaks as Unicode's (UAX #29, which Lucene's tokenizer implements) for letters
and digits ("6.76", "1,000", "men's" and "b0abc12" stay whole; "x-large" splits), then
PyStemmer's Porter stemmer. Holds :class:`SearchIndex` (build, save, load, and
:meth:`SearchIndex.search`: the top hits, ties broken by catalogue order so results never
depend on the platform) and :func:`load_index`, which returns the index for a cache key from
memory, else from ``<cache dir>/index-v<INDEX_VERSION>-<key>``, else builds and saves it. The
vocabulary is numbered in order of first occurrence, so the same catalogue always gives the
same index files. What is left of the gap to Lucene (its lossy one-byte document lengths, its
Porter variant) is measured by ``bench/webshop_search.py``.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import bm25s
import numpy as np
import Stemmer
from bm25s.tokenization import Tokenized

__all__ = [
    "INDEX_VERSION",
    "K1",
    "SEARCH_RETURN_N",
    "STOPWORDS",
    "B",
    "SearchIndex",
    "analyze",
    "load_index",
    "tokenize",
]

INDEX_VERSION = 2
"""Part of every cache key: bumped when tokenisation or scoring changes (2: Lucene's analysis
and pyserini's k1 and b)."""
SEARCH_RETURN_N = 50
"""How many hits a search keeps (WebShop's top 50)."""
K1, B = 0.9, 0.4
"""pyserini's BM25 defaults."""

STOPWORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their
    then there these they this to was will with""".split()
)
"""Lucene's English stop words (``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``)."""

# A run of word characters, kept whole across "." "'" "’" ":" between letters and "." "," ";"
# "'" "’" between digits (UAX #29's MidLetter / MidNum / MidNumLet rules).
_TOKEN = re.compile(
    r"\w+(?:(?:(?<=[^\W\d_])[.'’:](?=[^\W\d_])|(?<=\d)[.,;'’](?=\d))\w+)*"
)
_STEMMER = Stemmer.Stemmer("porter")


def analyze(text: str) -> list[str]:
    """Lucene-style tokens of ``text`` before stemming: words, possessives cut, lower case,
    stop words dropped.

    >>> analyze("The Men's X-Large T-Shirts, 1,000 pcs at $6.76")
    ['men', 'x', 'large', 't', 'shirts', '1,000', 'pcs', '6.76']
    """
    tokens = []
    for token in _TOKEN.findall(text.lower()):
        if token.endswith(("'s", "’s")):
            token = token[:-2]
        token = token.strip("_")
        if token and token not in STOPWORDS:
            tokens.append(token)
    return tokens


def tokenize(text: str) -> list[str]:
    """The index terms of ``text``: :func:`analyze`, then Porter stems.

    >>> tokenize("I need a long lasting 6.76 fl oz bottle of X-Large shampoos")
    ['i', 'need', 'long', 'last', '6.76', 'fl', 'oz', 'bottl', 'x', 'larg', 'shampoo']
    """
    return _STEMMER.stemWords(analyze(text))


class SearchIndex:
    """A BM25 index over documents numbered 0 … n−1.

    >>> index = SearchIndex.build(["red shampoo", "blue jeans", "red wine glass"])
    >>> index.search("red shampoo")
    [0, 2]
    """

    def __init__(self, retriever: bm25s.BM25) -> None:
        self._retriever = retriever
        self._vocab: dict[str, int] = retriever.vocab_dict

    @property
    def size(self) -> int:
        """The number of indexed documents."""
        return int(self._retriever.scores["num_docs"])

    @classmethod
    def build(cls, texts: Sequence[str]) -> SearchIndex:
        """Index ``texts`` (document ``i`` is ``texts[i]``) with pyserini's settings."""
        return cls.build_from_terms([tokenize(text) for text in texts])

    @classmethod
    def build_from_terms(
        cls, docs: Sequence[Sequence[str]], k1: float = K1, b: float = B
    ) -> SearchIndex:
        """Index documents given as their terms, with BM25's ``k1`` and ``b``."""
        vocab: dict[str, int] = {"": 0}
        ids = [[vocab.setdefault(term, len(vocab)) for term in terms] for terms in docs]
        retriever = bm25s.BM25(k1=k1, b=b)
        retriever.index(Tokenized(ids=ids, vocab=vocab), show_progress=False)
        return cls(retriever)

    def save(self, directory: Path) -> None:
        """Write the index files into ``directory``."""
        self._retriever.save(str(directory), show_progress=False)

    @classmethod
    def load(cls, directory: Path) -> SearchIndex:
        """Read an index written by :meth:`save`."""
        return cls(bm25s.BM25.load(str(directory), show_progress=False))

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[int]:
        """The ids of the ``k`` best documents with a positive score, best first."""
        return self.search_terms(tokenize(query), k)

    def search_terms(self, terms: Sequence[str], k: int = SEARCH_RETURN_N) -> list[int]:
        """:meth:`search` for a query given as its terms (repeats count again, as in Lucene's
        bag-of-words query)."""
        ids = [self._vocab[term] for term in terms if term in self._vocab]
        if not ids or k < 1:
            return []
        scores = self._retriever.get_scores(ids)
        k = min(k, len(scores))
        threshold = scores[np.argpartition(-scores, k - 1)[k - 1]]
        candidates = np.flatnonzero((scores >= threshold) & (scores > 0))
        order = np.lexsort((candidates, -scores[candidates]))
        return [int(doc) for doc in candidates[order][:k]]


_LOADED: dict[tuple[str, str], SearchIndex] = {}
_LOCK = threading.Lock()


def load_index(key: str, texts: Callable[[], Sequence[str]], cache_dir: Path) -> SearchIndex:
    """The index for ``key``: from memory, else from disk, else built from ``texts()`` and saved.

    The key must change whenever the documents do (the shop derives it from the catalogue's
    parameters). Writing goes through a temporary folder and a rename, so concurrent
    processes never see half an index.
    """
    folder = Path(cache_dir) / f"index-v{INDEX_VERSION}-{key}"
    memo = (str(folder), key)
    with _LOCK:
        if memo in _LOADED:
            return _LOADED[memo]
        if (folder / "params.index.json").exists():
            index = SearchIndex.load(folder)
        else:
            index = SearchIndex.build(texts())
            folder.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
            index.save(staging)
            try:
                staging.rename(folder)
            except OSError:  # another process saved it first
                shutil.rmtree(staging, ignore_errors=True)
        _LOADED[memo] = index
        return index
