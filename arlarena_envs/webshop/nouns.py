"""A small rule-based noun tagger for product titles (the reward's type match).

The original reward keeps the tokens spaCy's small English model tags NOUN or PROPN. spaCy and
its model are heavy, so :func:`title_nouns` approximates them for product titles: a lower-case
alphabetic token of two or more letters is a noun unless it is a function word, a known
adjective (colours, sizes, product descriptors), or has an adjectival or participle ending
(``-less``, ``-ful``, ``-ous``, ``-able``/``-ible``, ``-ive``, ``-ing``, ``-ed``, ``-ly`` after a
stem of three or more letters, so *cable* and *olive* stay nouns; with a list of nouns that
only look like that, e.g. *clothing*, *speed*, *family*). Brand names and
other unknown words count as nouns, as spaCy's PROPN does. Numbers never do. Like the
original it works on surface forms: *shoe* and *shoes* are different nouns.
"""

from __future__ import annotations

import re

__all__ = ["ADJECTIVES", "FUNCTION_WORDS", "title_nouns"]

_TOKEN = re.compile(r"[a-z]+")

FUNCTION_WORDS = frozenset(
    """a an the and or but nor of for with without in on at by to from into onto over under up
    down out off as per via vs x is are be been being was were it its this that these those
    your you our we my me he she his her their they them i s t all any each every both no not
    only very so too than then also just more most less least new one two three four five six
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
    satin matte creamy glossy gel mineral broad sport sturdy cozy lightweight heavyweight
    waterproof shockproof rugged silent loud outdoor mesh trail athletic graphic stretch
    skinny straight flowy wrap fleece zip seamless insulated cushioned cotton wool comfort
    platform strappy orthopedic adjustable washed signature floral fresh warm ionic ceramic
    powerful nourishing refreshing foaming synthetic mineral frameless class chewy crunchy
    vegan whey japanese antioxidant imported artisan bittersweet roasted salted whole
    unfiltered wildflower creamed tender grass smoked gourmet certified kosher friendly
    clarifying volumizing repairing hydrating moisturizing firming leave""".split()
)
"""Adjectives (and adjective-like descriptors) of product titles."""

_NOUNS_THAT_LOOK_ADJECTIVAL = frozenset(
    """clothing bedding seasoning ceiling lighting flooring stuffing frosting dressing wedding
    stocking earring topping filling packaging pudding icing serving building painting
    string spring ceiling speed tweed breed steed family supply assembly jelly belly butterfly
    vegetable""".split()
)
_SUFFIXES = ("less", "ful", "ous", "able", "ible", "ive", "ing", "ed", "ly")


def _is_noun(token: str) -> bool:
    if len(token) < 2 or token in FUNCTION_WORDS or token in ADJECTIVES:
        return False
    if token in _NOUNS_THAT_LOOK_ADJECTIVAL:
        return True
    return not any(
        token.endswith(suffix) and len(token) - len(suffix) >= 3 for suffix in _SUFFIXES
    )


def title_nouns(title: str) -> list[str]:
    """The nouns of ``title``, lower-case, in order, repeats kept.

    >>> title_nouns("Kalu Long Lasting Moisturizing Shampoo for Dry Hair, 16.9 fl oz")
    ['kalu', 'shampoo', 'hair', 'fl', 'oz']
    """
    return [token for token in _TOKEN.findall(title.lower()) if _is_noun(token)]
