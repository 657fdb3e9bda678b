"""Scripted WebShop agents that read only what a model would: the page text, the admissible
actions and the instruction.

Holds :class:`WebShopHeuristicAgent` (``webshop-heuristic``: search the instruction, open the
result whose title and price fit it best, pick the option values the instruction names, buy)
and :class:`WebShopRandomAgent` (``webshop-random``: search the instruction, then click
uniformly at random), both answering in the strict ``<think>…</think><action>…</action>``
format. Neither reads the env's state; the heuristic remembers its own earlier choices per
episode (which products it opened, which options it clicked), keyed by the env it talks to.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from wrappers.agents.base import Agent, AgentRequest, register_agent, stream_seed
from wrappers.format import format_response

__all__ = [
    "WebShopHeuristicAgent",
    "WebShopRandomAgent",
    "instruction_query",
    "price_limit",
]

_SEARCH = "search[<your query>]"
_SEP = " [SEP] "
_NAVIGATION = frozenset(
    {"back to search", "< prev", "next >", "description", "features", "reviews", "buy now"}
)
_PRICE_LIMIT = re.compile(r"price lower than ([0-9]+(?:\.[0-9]+)?) dollars")
_PRICE = re.compile(r"\$([0-9][0-9,]*(?:\.[0-9]+)?)")
_LEADS = re.compile(
    r"^(i need|i'm looking for|i am looking for|find me|i want to buy|i want|can you get me|"
    r"get me|looking for)\s+",
)
_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")
_FILLER = frozenset(
    "a an the and in with of for that is it which color size scent flavor style pattern "
    "name capacity material item package quantity made".split()
)
_MAX_PRODUCTS_OPENED = 3


def price_limit(task: str) -> float | None:
    """The instruction's price bound in dollars, if it states one.

    >>> price_limit("i need socks, and price lower than 30.00 dollars")
    30.0
    """
    found = _PRICE_LIMIT.search(task.lower())
    return float(found.group(1)) if found else None


def instruction_query(task: str) -> str:
    """The instruction as a search query: no price clause, no request words.

    >>> instruction_query("i need a long lasting shampoo, and price lower than 30.00 dollars")
    'a long lasting shampoo'
    """
    text = _PRICE_LIMIT.sub("", task.lower()).strip().rstrip(",").strip()
    text = re.sub(r",\s*and\s*$", "", text)
    return _LEADS.sub("", text).strip() or task.strip()


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _FILLER}


def _think_and_act(think: str, action: str) -> str:
    return format_response(think, action)


@dataclass
class _Episode:
    opened: list[str] = field(default_factory=list)
    clicked: set[str] = field(default_factory=set)
    pages_turned: int = 0


@register_agent("webshop-heuristic")
class WebShopHeuristicAgent(Agent):
    """Search, pick the best-matching result, choose the named options, buy.

    >>> agent = WebShopHeuristicAgent()
    >>> info = {"task": "i need red socks, and price lower than 20.00 dollars",
    ...         "admissible_actions": ["search[<your query>]"], "anchor": "WebShop"}
    >>> agent.act([AgentRequest("", info)])[0]
    '<think>Search for what the instruction asks.</think><action>search[red socks]</action>'
    """

    name = "webshop-heuristic"
    envs = ("webshop",)

    def __init__(self, **_: Any) -> None:
        self._episodes: dict[Any, _Episode] = {}

    def act(self, requests: Sequence[AgentRequest]) -> list[str]:
        return [self._one(request) for request in requests]

    def _one(self, request: AgentRequest) -> str:
        info = request.info
        task = str(info.get("task", ""))
        admissible = list(info.get("admissible_actions", []))
        elements = str(info.get("anchor", "")).split(_SEP)
        key = id(request.env) if request.env is not None else (task, request.sample)
        if _SEARCH in admissible:
            self._episodes[key] = _Episode()
            return _think_and_act(
                "Search for what the instruction asks.", f"search[{instruction_query(task)}]"
            )
        episode = self._episodes.setdefault(key, _Episode())
        labels = [a[6:-1] for a in admissible if a.startswith("click[") and a.endswith("]")]
        if "buy now" in labels:
            return self._on_item(task, elements, labels, episode)
        products = [label for label in labels if label not in _NAVIGATION]
        if products:
            return self._on_results(task, elements, labels, products, episode)
        if "< prev" in labels:
            return _think_and_act("Go back to the product.", "click[< prev]")
        fallback = "click[back to search]" if "back to search" in labels else admissible[0]
        return _think_and_act("Nothing useful here; start over.", fallback)

    def _on_results(
        self, task: str, elements: list[str], labels: list[str], products: list[str],
        episode: _Episode,
    ) -> str:
        wanted, limit = _words(instruction_query(task)), price_limit(task)
        lowered = [e.lower() for e in elements]
        best, best_score = None, float("-inf")
        for asin in products:
            if asin in episode.opened or asin not in lowered:
                continue
            at = lowered.index(asin)
            title = elements[at + 1] if at + 1 < len(elements) else ""
            price = _PRICE.search(elements[at + 2]) if at + 2 < len(elements) else None
            score = len(wanted & _words(title)) / (1 + 0.05 * len(_words(title)))
            if limit is not None and price and float(price.group(1).replace(",", "")) > limit:
                score -= 10
            if score > best_score:
                best, best_score = asin, score
        if best is None:
            if "next >" in labels and episode.pages_turned < 2:
                episode.pages_turned += 1
                return _think_and_act("No new candidates here; next page.", "click[next >]")
            return _think_and_act("Nothing fits; search again.", "click[back to search]")
        episode.opened.append(best)
        episode.clicked.clear()
        return _think_and_act(f"{best} matches the instruction best.", f"click[{best}]")

    def _on_item(
        self, task: str, elements: list[str], labels: list[str], episode: _Episode
    ) -> str:
        limit = price_limit(task)
        price_text = next((e for e in elements if e.startswith("Price:")), "")
        price = _PRICE.search(price_text)
        too_dear = limit is not None and price and float(price.group(1).replace(",", "")) > limit
        if too_dear and len(episode.opened) < _MAX_PRODUCTS_OPENED and "< prev" in labels:
            return _think_and_act("Too expensive; look at another result.", "click[< prev]")
        groups, wanted = self._wanted_options(task, elements, set(labels))
        if groups and len(wanted) < groups and len(episode.opened) < _MAX_PRODUCTS_OPENED:
            return _think_and_act("It lacks options the instruction names; try another.",
                                  "click[< prev]")
        for value in wanted:
            if value not in episode.clicked:
                episode.clicked.add(value)
                return _think_and_act(f"The instruction asks for {value}.", f"click[{value}]")
        return _think_and_act("Options chosen; buy it.", "click[buy now]")

    @staticmethod
    def _wanted_options(
        task: str, elements: list[str], labels: set[str]
    ) -> tuple[int, list[str]]:
        """How many option groups the item page has, and per group the value the instruction
        names best (groups where it names none are left out)."""
        text = f" {' '.join(_WORD.findall(instruction_query(task)))} "
        lowered = [e.lower() for e in elements]
        try:
            start = lowered.index("< prev") + 1
        except ValueError:
            return 0, []
        groups: list[list[str]] = []
        for element in lowered[start:]:
            if element.startswith("price:"):
                break
            if element in labels and element not in _NAVIGATION:
                if groups:
                    groups[-1].append(element)
            else:
                groups.append([])
        chosen = []
        for values in groups:
            scored = []
            for value in values:
                phrase = " ".join(_WORD.findall(value))
                if phrase and f" {phrase} " in text:
                    scored.append((2.0 + len(phrase), value))
                else:
                    words = set(_WORD.findall(value))
                    overlap = len(words & set(text.split())) / max(1, len(words))
                    if overlap >= 0.5:
                        scored.append((overlap, value))
            if scored:
                chosen.append(max(scored)[1])
        return sum(1 for values in groups if values), chosen


@register_agent("webshop-random")
class WebShopRandomAgent(Agent):
    """Search the instruction, then click uniformly among the admissible clicks (each draw
    from the stream of the request's episode and turn, so episodes replay exactly)."""

    name = "webshop-random"
    envs = ("webshop",)

    def __init__(self, seed: int = 0, **_: Any) -> None:
        self.seed = seed

    def act(self, requests: Sequence[AgentRequest]) -> list[str]:
        responses = []
        for request in requests:
            admissible = list(request.info.get("admissible_actions", []))
            task = str(request.info.get("task", ""))
            if _SEARCH in admissible:
                action = f"search[{instruction_query(task)}]"
            else:
                clicks = [a for a in admissible if a.startswith("click[")]
                rng = random.Random(stream_seed(self.seed, request.episode_id, request.turn))
                action = rng.choice(clicks) if clicks else "click[back to search]"
            responses.append(_think_and_act("A random choice.", action))
        return responses

