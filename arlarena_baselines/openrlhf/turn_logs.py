"""The episode and per-turn columns the agent sends through OpenRLHF's ``extra_logs``.

OpenRLHF keeps one sample per episode (every turn in one token sequence) and turns each value
of the agent's last ``extra_logs`` into an ``Experience.info`` tensor: a number becomes a (1,)
entry (logged as a metric, averaged over samples), a list of numbers a (1, turns) row that
batching right-pads with zeros. :mod:`.agent` writes these keys; the plugin's advantage hook
(:mod:`.advantages`) reads the per-turn rows and removes them before OpenRLHF logs ``info``.
GiGPO's anchor observations travel as 63-bit hashes.
"""

from __future__ import annotations

import hashlib

from arlarena_baselines.algos import metric_names as mn

__all__ = [
    "PER_TURN",
    "SUCCESS",
    "TURNS",
    "TURN_ANCHORS",
    "TURN_REWARDS",
    "VALID_RATIO",
    "anchor_id",
]

SUCCESS = mn.SUCCESS_RATE
VALID_RATIO = mn.VALID_FORMAT_RATIO
TURNS = mn.TURNS
TURN_REWARDS = "arlarena/turn_rewards"
TURN_ANCHORS = "arlarena/turn_anchors"
PER_TURN: tuple[str, ...] = (TURN_REWARDS, TURN_ANCHORS)


def anchor_id(anchor: str) -> int:
    """A stable non-negative 63-bit id of an anchor observation (equal texts, equal ids).

    >>> anchor_id("room A") == anchor_id("room A") != anchor_id("room B")
    True
    """
    digest = hashlib.blake2b(anchor.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1
