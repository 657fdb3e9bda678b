"""The nouns of a product title (the reward's type match): spaCy when installed, else rules.

The original keeps the tokens spaCy's small English model (``en_core_web_sm``) tags NOUN or
PROPN. :func:`title_nouns` does the same when spaCy and an English model can be loaded
(``$ARLARENA_SPACY_MODEL``, a package name or a path, default ``en_core_web_sm``); nothing is
downloaded. Otherwise it uses :func:`rule_nouns`, a dependency-free tagger fitted to how spaCy
reads title-case product titles: it tags almost every capitalised word PROPN, adjectives and
participles included ('Rattan', 'Creamy', 'Slim', 'Long Lasting'), so a capitalised word is a
noun unless it is a function word, follows "to" (an infinitive: 'Easy to Use') or is an
adverb in ``-ly``. Lower-case words (rare in titles: 'fl oz', 'for', 'with') are nouns unless
they are function words, known adjectives, or have an adjectival or participle ending. Numbers
never are. Like the original it works on surface forms: *shoe* and *shoes* are different
nouns. :func:`noun_tagger` says which tagger runs (``"spacy:<model> <version>"`` or
``"rules"``); ``$ARLARENA_NOUN_TAGGER=rules`` forces the rules.
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "ADJECTIVES",
    "FUNCTION_WORDS",
    "SPACY_MODEL_ENV_VAR",
    "TAGGER_ENV_VAR",
    "noun_tagger",
    "rule_nouns",
    "title_nouns",
]

SPACY_MODEL_ENV_VAR = "ARLARENA_SPACY_MODEL"
TAGGER_ENV_VAR = "ARLARENA_NOUN_TAGGER"
_DEFAULT_MODEL = "en_core_web_sm"

FUNCTION_WORDS = frozenset(
    """a an the and or but nor of for with without in on at by to from into onto over under up
    down out off as per via vs is are be been being was were it its this that these those
    your you our we my me he she his her their they them i s t all any each every both no not
    only very so too than then also just more most less least one two three four five six
    seven eight nine ten""".split()
)
"""Articles, prepositions, conjunctions, pronouns, number words: never nouns."""

ADJECTIVES = frozenset(
    """black white blue red green yellow orange purple pink brown grey gray beige ivory khaki
    navy silver gold golden coral burgundy lavender mint olive mustard charcoal multicolor nude
    mauve plum peach ruby royal hot light dark bright pale small medium large big mini little
    tall short long wide narrow thin thick slim compact huge tiny heavy high low deep soft hard
    smooth fresh natural organic pure raw premium professional classic modern vintage rustic
    casual basic deluxe ultra extra super great good best easy quick fast dry wet warm cold
    cool sweet salty spicy bold crisp gentle daily sheer sport true total round square double
    dual single triple electric electronic digital smart mobile outdoor indoor ergonomic free
    non anti multi open full local italian japanese belgian mediterranean floral boho oversized
    upholstered tufted swivel backless wooden metal velvet linen leather bamboo faux rattan
    satin matte creamy glossy gel mineral broad sturdy cozy lightweight heavyweight
    waterproof shockproof rugged silent loud mesh trail athletic graphic stretch
    skinny straight flowy wrap fleece zip seamless insulated cushioned cotton wool comfort
    platform strappy orthopedic adjustable washed signature ionic ceramic
    powerful nourishing refreshing foaming synthetic frameless class chewy crunchy
    vegan whey antioxidant imported artisan bittersweet roasted salted whole
    unfiltered wildflower creamed tender grass smoked gourmet certified kosher friendly
    clarifying volumizing repairing hydrating moisturizing firming leave new""".split()
)
"""Adjectives (and adjective-like descriptors) of product titles, for lower-case words."""

_NOUNS_THAT_LOOK_ADJECTIVAL = frozenset(
    """clothing bedding seasoning ceiling lighting flooring stuffing frosting dressing wedding
    stocking earring topping filling packaging pudding icing serving building painting
    string spring speed tweed breed steed family supply assembly jelly belly butterfly
    vegetable""".split()
)
_SUFFIXES = ("less", "ful", "ous", "able", "ible", "ive", "ing", "ed", "ly")
_TOKEN = re.compile(r"[0-9]+(?:\.[0-9]+)*|[A-Za-z]+|%")
_UNITS = frozenset("g kg mg ml l oz lb lbs mm cm m ft".split())


def _lower_case_noun(token: str) -> bool:
    if len(token) < 2 or token in ADJECTIVES:
        return False
    if token in _NOUNS_THAT_LOOK_ADJECTIVAL:
        return True
    return not any(
        token.endswith(suffix) and len(token) - len(suffix) >= 3 for suffix in _SUFFIXES
    )


def rule_nouns(title: str) -> list[str]:
    """The nouns of ``title`` by the rules of the module docs, lower-case, in order.

    >>> rule_nouns("Kalu Long Lasting Moisturizing Shampoo for Dry Hair, 16.9 fl oz")
    ['kalu', 'long', 'lasting', 'moisturizing', 'shampoo', 'dry', 'hair', 'fl', 'oz']
    >>> rule_nouns("Easy to Use Slim Rattan Chair, Individually Wrapped")
    ['easy', 'slim', 'rattan', 'chair', 'wrapped']
    """
    nouns: list[str] = []
    previous = ""
    for match in _TOKEN.finditer(title):
        token, word = match.group(), match.group().lower()
        glued = match.start() > 0 and title[match.start() - 1].isdigit()
        if word == "%" or (glued and word in _UNITS) or (token.isupper() and len(token) == 1):
            nouns.append(word)  # '100%', '20g', the 'T' of 'T-Shirt'
        elif word.isdigit() or word[0].isdigit() or glued or word in FUNCTION_WORDS:
            pass
        elif token[0].isupper():
            if previous != "to" and not word.endswith("ually"):
                nouns.append(word)
        elif _lower_case_noun(word):
            nouns.append(word)
        previous = word
    return nouns


_LOCK = threading.Lock()
_SPACY: list[Any] = []  # [] not tried yet; [None] unavailable; [nlp] loaded


def _load_spacy() -> Any:
    """The spaCy pipeline to tag with, or ``None`` (rules forced, or no spaCy / model)."""
    with _LOCK:
        if not _SPACY:
            _SPACY.append(_try_spacy())
        return _SPACY[0]


def _try_spacy() -> Any:
    if os.environ.get(TAGGER_ENV_VAR, "").strip().lower() == "rules":
        return None
    model = os.environ.get(SPACY_MODEL_ENV_VAR) or _DEFAULT_MODEL
    if not Path(model).exists() and importlib.util.find_spec(model) is None:
        return None  # checked first: importing spaCy alone takes seconds
    try:
        import spacy

        return spacy.load(model)
    except (ImportError, OSError, ValueError):
        return None


def noun_tagger() -> str:
    """Which tagger :func:`title_nouns` uses: ``"spacy:<model> <version>"`` or ``"rules"``."""
    nlp = _load_spacy()
    if nlp is None:
        return "rules"
    meta = nlp.meta
    return f"spacy:{meta.get('lang', '')}_{meta.get('name', '')} {meta.get('version', '')}"


@lru_cache(maxsize=65536)
def _nouns(title: str) -> tuple[str, ...]:
    nlp = _load_spacy()
    if nlp is None:
        return tuple(rule_nouns(title))
    return tuple(t.text.lower() for t in nlp(title) if t.pos_ in ("NOUN", "PROPN"))


def title_nouns(title: str) -> list[str]:
    """The nouns of ``title``, lower-case, in order, repeats kept (spaCy's if installed).

    >>> title_nouns("Rattan Creamy Slim Armchair") if noun_tagger() == "rules" else ["rattan",
    ...     "creamy", "slim", "armchair"]
    ['rattan', 'creamy', 'slim', 'armchair']
    """
    return list(_nouns(title))
