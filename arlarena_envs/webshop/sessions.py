"""Per-session server state: which goal a session shops for and what it bought.

Holds :class:`Purchase`, :class:`Session` and :class:`SessionStore`, a thread-safe store with a
bounded number of sessions (the least recently used are forgotten first), so a long-running
server with many agents keeps bounded memory. A session's first purchase is final, as an
episode ends at "Buy Now".
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arlarena_envs.webshop.reward import DEFAULT_REWARD, RewardBreakdown, check_reward
from arlarena_envs.webshop.schema import Goal, Product
from arlarena_envs.webshop.shop import Shop

__all__ = ["MAX_SESSIONS", "Purchase", "Session", "SessionStore"]

MAX_SESSIONS = 20_000


@dataclass(frozen=True)
class Purchase:
    """What a session bought and how it scored."""

    product: Product
    options: dict[str, str]
    breakdown: RewardBreakdown


@dataclass
class Session:
    """One shopper's state on the server."""

    sid: str
    split: str
    goal_index: int
    goal: Goal
    purchase: Purchase | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able state (served at ``/api/sessions/<sid>``; the goal is privileged)."""
        bought = self.purchase
        return {
            "sid": self.sid,
            "split": self.split,
            "goal_index": self.goal_index,
            "instruction": self.goal.instruction,
            "goal": self.goal.to_dict(),
            "done": bought is not None,
            "score": bought.breakdown.score if bought else 0.0,
            "won": bought.breakdown.won if bought else False,
            "purchase": None if bought is None else {
                "asin": bought.product.asin,
                "title": bought.product.title,
                "options": dict(bought.options),
                "price": bought.product.price,
                "r_type": bought.breakdown.r_type,
                "attributes_matched": bought.breakdown.attributes_matched,
                "options_matched": bought.breakdown.options_matched,
                "price_ok": bought.breakdown.price_ok,
                "reward": bought.breakdown.rule,
            },
        }


class SessionStore:
    """Sessions by id, for one shop; purchases are scored with the option rule ``reward``."""

    def __init__(
        self, shop: Shop, max_sessions: int = MAX_SESSIONS, reward: str = DEFAULT_REWARD
    ) -> None:
        self.shop = shop
        self.max_sessions = max_sessions
        self.reward = check_reward(reward)
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def start(self, sid: str, split: str, goal_index: int) -> Session:
        """(Re)start ``sid`` on goal ``goal_index`` of ``split`` (``ValueError``: no such split)."""
        goal_index %= max(1, self.shop.split_size(split))
        session = Session(sid, split, goal_index, self.shop.goal(split, goal_index))
        with self._lock:
            self._sessions[sid] = session
            self._sessions.move_to_end(sid)
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        return session

    def get(self, sid: str) -> Session | None:
        """The session ``sid``, or ``None``."""
        with self._lock:
            session = self._sessions.get(sid)
            if session is not None:
                self._sessions.move_to_end(sid)
            return session

    def get_or_start(self, sid: str) -> Session:
        """The session ``sid``; a new one gets a training goal drawn from its id."""
        session = self.get(sid)
        if session is not None:
            return session
        index = random.Random(f"arlarena-webshop:session:{sid}").randrange(1 << 30)
        return self.start(sid, "train", index)

    def buy(self, session: Session, product: Product, options: Mapping[str, str]) -> Purchase:
        """Record the session's purchase (the first one stands) and return it."""
        with self._lock:
            if session.purchase is None:
                breakdown = self.shop.score(session.goal, product, options, self.reward)
                session.purchase = Purchase(product, dict(options), breakdown)
            return session.purchase
