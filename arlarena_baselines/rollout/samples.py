"""What a rollout produces: one :class:`StepSample` per turn and one :class:`EpisodeResult` (the
loop's :class:`~.episodes.Episode`) per episode, gathered in a :class:`Rollout`.

A step sample is the unit every loss of the zoo works on (``docs/algorithms.md``, "Notation"):
the turn's prompt and response token ids, the behaviour policy's log-probs of the response,
the turn's reward, its trajectory's episode return, and the ids that group samples (``group_id``
for the task, ``traj_id`` for the rollout, ``step`` for the turn, ``anchor`` for GiGPO).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from arlarena_baselines.rollout.episodes import Episode

__all__ = ["EpisodeResult", "Rollout", "StepSample"]


@dataclass
class StepSample:
    """One turn of one rollout.

    Attributes:
        prompt_ids: the chat-formatted prompt's token ids.
        response_ids: the sampled response's token ids (with the end-of-sequence token when the
            model stopped by itself).
        old_log_probs: log π_old of each response token (filled by the rollout's scorer).
        reward: the turn's reward after the format penalty.
        episode_score: the return (sum of rewards) of the sample's trajectory.
        group_id, traj_id: the task (env seed) and the rollout the turn belongs to.
        step: the turn index in its trajectory (0-based).
        anchor: the raw env observation before the action (GiGPO's anchor state).
        valid: whether the response passed the strict format check.
        entropy: the mean token entropy of π_old over the response (EMPG's turn entropy).
        prompt, response: the texts (kept for logs and behaviour cloning).
        action: what the env executed (the format check's action; ``""`` when none).
    """

    prompt_ids: list[int]
    response_ids: list[int]
    reward: float
    group_id: str
    traj_id: str
    step: int
    anchor: str
    valid: bool
    prompt: str = ""
    response: str = ""
    action: str = ""
    episode_score: float = 0.0
    old_log_probs: list[float] = field(default_factory=list)
    entropy: float = 0.0


EpisodeResult = Episode
"""A finished episode as a rollout keeps it: the loop's :class:`~.episodes.Episode`."""


@dataclass
class Rollout:
    """The step samples and episode summaries of one round of rollouts."""

    samples: list[StepSample] = field(default_factory=list)
    episodes: list[Episode] = field(default_factory=list)
    generated_tokens: int = 0

    def extend(self, other: Rollout) -> None:
        """Append ``other``'s samples and episodes to this one."""
        self.samples += other.samples
        self.episodes += other.episodes
        self.generated_tokens += other.generated_tokens

    def select(self, keep: list[bool]) -> list[StepSample]:
        """The samples whose ``keep`` flag is set (one flag per sample)."""
        return [s for s, k in zip(self.samples, keep, strict=True) if k]

    def column(self, name: str) -> list[Any]:
        """One attribute of every sample, e.g. ``column("group_id")``."""
        return [getattr(s, name) for s in self.samples]
