"""BM25 product search (``bm25s``), with the index cached on disk and in the process.

Holds :func:`tokenize` (lower-case words and decimal numbers, English stop words dropped),
:class:`SearchIndex` (build, save, load, and :meth:`SearchIndex.search`: the top hits, ties
broken by catalogue order so results never depend on the platform) and :func:`load_index`,
which returns the index for a cache key from memory, else from ``<cache dir>/index-<key>``,
else builds and saves it. The vocabulary is numbered in order of first occurrence, so the
same catalogue always gives the same index files.
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
from bm25s.tokenization import Tokenized

__all__ = ["INDEX_VERSION", "SEARCH_RETURN_N", "STOPWORDS", "SearchIndex", "load_index", "tokenize"]

INDEX_VERSION = 1
"""Part of every cache key: bumped when tokenisation or scoring changes."""
SEARCH_RETURN_N = 50
"""How many hits a search keeps (WebShop's top 50)."""

STOPWORDS = frozenset(
    """a an and are as at be but by for from has have i i'm if in into is it its me my need of
    on or please so that the their then there these this to want was were will with would you
    your can get find looking buy m re ve ll d s t""".split()
)
"""English stop words (with the pieces of contractions) plus the request words instructions open
with."""

_TOKEN = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")


def tokenize(text: str) -> list[str]:
    """Lower-case word and number tokens of ``text`` without stop words.

    >>> tokenize("I need a 6.76 fl oz bottle of X-Large shampoo")
    ['6.76', 'fl', 'oz', 'bottle', 'x', 'large', 'shampoo']
    """
    return [token for token in _TOKEN.findall(text.lower()) if token not in STOPWORDS]


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
        """Index ``texts`` (document ``i`` is ``texts[i]``)."""
        vocab: dict[str, int] = {"": 0}
        ids = [[vocab.setdefault(tok, len(vocab)) for tok in tokenize(text)] for text in texts]
        retriever = bm25s.BM25()
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
        ids = [self._vocab[tok] for tok in tokenize(query) if tok in self._vocab]
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
