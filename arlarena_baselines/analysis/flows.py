"""Episodes as sequences of action types: transitions, outcomes and loops.

Holds :class:`EpisodeFlow` (one finished episode's actions, action types, states and outcome),
:func:`episode_flows` (from the records of ``arlarena eval``), :func:`transition_counts`,
:func:`action_counts`, :class:`Loops` and :func:`find_loops` (repeated ``next``,
``click_product`` ↔ ``back``/``prev`` oscillation, repeated identical actions, and the same
action taken again in the same state).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from arlarena_baselines.analysis.actions import classify_action

__all__ = [
    "ERROR",
    "FAILURE",
    "SUCCESS",
    "EpisodeFlow",
    "Loops",
    "action_counts",
    "episode_flows",
    "find_loops",
    "transition_counts",
]

SUCCESS, FAILURE, ERROR = "success", "failure", "error"


@dataclass(frozen=True)
class EpisodeFlow:
    """One finished episode.

    Attributes:
        actions: the executed action texts (``None`` where none could be parsed).
        types: their action types (:func:`~.actions.classify_action`).
        states: the raw state before each action (the turn's ``anchor``), or ``""``.
        outcome: ``success``, ``failure``, or ``error`` (ended by an agent error).
    """

    agent: str
    env: str
    episode_id: str
    actions: tuple[str | None, ...]
    types: tuple[str, ...]
    states: tuple[str, ...]
    outcome: str


def episode_flows(records: Iterable[dict[str, Any]]) -> list[EpisodeFlow]:
    """The finished episodes of ``records`` (turns of unfinished episodes are ignored), in the
    order their episode records appear."""
    turns: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    ends: list[dict[str, Any]] = []
    for record in records:
        key = (_text(record.get("agent")), _text(record.get("env")),
               _text(record.get("episode_id")))
        if record.get("type") == "turn":
            turns[key].append(record)
        elif record.get("type") == "episode":
            ends.append(record)
    flows = []
    for end in ends:
        agent, env, episode_id = (_text(end.get(k)) for k in ("agent", "env", "episode_id"))
        steps = sorted(turns.get((agent, env, episode_id), []),
                       key=lambda t: t["step"] if isinstance(t.get("step"), int) else 0)
        actions = tuple(None if t.get("parsed_action") is None else str(t["parsed_action"])
                        for t in steps)
        if end.get("error"):
            outcome = ERROR
        else:
            outcome = SUCCESS if end.get("won") else FAILURE
        flows.append(EpisodeFlow(
            agent=agent,
            env=env,
            episode_id=episode_id,
            actions=actions,
            types=tuple(classify_action(a, env) for a in actions),
            states=tuple(str(t.get("anchor") or "") for t in steps),
            outcome=outcome,
        ))
    return flows


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def transition_counts(
    flows: Sequence[EpisodeFlow], *, outcome: str | None = None, terminal: bool = True
) -> Counter[tuple[str, str]]:
    """Counts of ``(type, next type)`` over consecutive steps, regardless of the step index.

    With ``terminal`` each episode's last action also flows into its outcome
    (``(last type, "success")``); ``outcome`` keeps only episodes that ended that way.

    >>> flow = EpisodeFlow("a", "webshop", "e", (), ("search", "click_product", "buy"), (),
    ...                    "success")
    >>> sorted(transition_counts([flow]).items())
    [(('buy', 'success'), 1), (('click_product', 'buy'), 1), (('search', 'click_product'), 1)]
    """
    counts: Counter[tuple[str, str]] = Counter()
    for flow in flows:
        if outcome is not None and flow.outcome != outcome:
            continue
        counts.update(pairwise(flow.types))
        if terminal and flow.types:
            counts[(flow.types[-1], flow.outcome)] += 1
    return counts


def action_counts(flows: Sequence[EpisodeFlow], *, outcome: str | None = None) -> Counter[str]:
    """How often each action type was taken (optionally only in episodes with ``outcome``)."""
    counts: Counter[str] = Counter()
    for flow in flows:
        if outcome is None or flow.outcome == outcome:
            counts.update(flow.types)
    return counts


@dataclass(frozen=True)
class Loops:
    """The loop counts of one episode.

    Attributes:
        repeated_next: ``next`` directly after ``next`` (paging on instead of choosing).
        oscillations: ``click_product`` → ``back``/``prev`` → ``click_product`` triples.
        repeated_actions: an action identical to the one just before it.
        longest_repeat: the longest run of identical consecutive actions (0 without actions).
        revisits: an action taken again in a state where it was already taken (no progress).
    """

    repeated_next: int
    oscillations: int
    repeated_actions: int
    longest_repeat: int
    revisits: int

    @property
    def any(self) -> bool:
        """Whether the episode shows any loop."""
        return bool(self.repeated_next or self.oscillations or self.repeated_actions
                    or self.revisits)


def find_loops(flow: EpisodeFlow) -> Loops:
    """Count the loops of one episode.

    >>> types = ("search", "click_product", "prev", "click_product", "prev", "click_product")
    >>> find_loops(EpisodeFlow("a", "webshop", "e", types, types, (), "failure")).oscillations
    2
    """
    types, actions = flow.types, flow.actions
    pairs = list(pairwise(types))
    oscillations = sum(
        a == "click_product" and b in ("back", "prev") and c == "click_product"
        for a, b, c in zip(types, types[1:], types[2:], strict=False)
    )
    repeats = [a is not None and a == b for a, b in pairwise(actions)]
    longest = run = 1
    for repeated in repeats:
        run = run + 1 if repeated else 1
        longest = max(longest, run)
    seen: set[tuple[str, str | None]] = set()
    revisits = 0
    for state, action in zip(flow.states, actions, strict=False):
        if state and action is not None:
            revisits += (state, action) in seen
            seen.add((state, action))
    return Loops(
        repeated_next=sum(a == b == "next" for a, b in pairs),
        oscillations=oscillations,
        repeated_actions=sum(repeats),
        longest_repeat=longest if actions else 0,
        revisits=revisits,
    )
