"""``ARLArena/Bandit-v0``: pick the arm that pays, in the study's strict response format.

Holds :class:`BanditEnv`. Its prompt template ``bandit`` lives with the others in
:data:`wrappers.templates.TEMPLATES` (its text is short, so tiny models see short prompts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arlarena_envs.base import TextEnv, coerce_action

__all__ = ["ARMS", "BanditEnv"]

ARMS: tuple[str, ...] = ("red", "green", "blue", "yellow")
TASK = "Pull the arm that pays."


class BanditEnv(TextEnv):
    """A multi-armed bandit with text actions: only the ``target`` arm pays 1.

    Each of the ``rounds`` turns shows the arms and takes one arm name as the action (after
    stripping and lower-casing); the ``target`` arm earns 1, any other arm 0, and text that is
    not an arm is an invalid action earning 0. The episode ends after ``rounds`` turns; ``won``
    means every pull hit the target and ``info["score"]`` is the fraction that did. The anchor
    is the round's observation, so rollouts of a group share anchors (GiGPO's step groups).
    The task does not depend on the seed: one well-formed answer is always the rewarded one.

    Example:
        >>> import gymnasium as gym, arlarena_envs
        >>> env = gym.make("ARLArena/Bandit-v0")
        >>> obs, info = env.reset(seed=0)
        >>> info["admissible_actions"]
        ['red', 'green', 'blue', 'yellow']
        >>> _, reward, terminated, _, info = env.step("blue")
        >>> reward, terminated, info["won"]
        (1.0, True, True)
    """

    prompt_template = "bandit"

    def __init__(
        self,
        arms: Sequence[str] = ARMS,
        target: str = "blue",
        rounds: int = 1,
        render_mode: str | None = None,
    ) -> None:
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        self.arms = [str(a).strip().lower() for a in arms]
        if len(set(self.arms)) != len(self.arms) or len(self.arms) < 2:
            raise ValueError(f"need at least two distinct arms, got {list(arms)}")
        self.target = target.strip().lower()
        if self.target not in self.arms:
            raise ValueError(f"target {target!r} is not one of the arms {self.arms}")
        if rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {rounds}")
        self.rounds = int(rounds)
        self._round = 0
        self._hits = 0

    def _observation(self) -> str:
        if self._round >= self.rounds:
            return f"All {self.rounds} round(s) are played."
        return f"Round {self._round + 1} of {self.rounds}. The arms are {', '.join(self.arms)}."

    def _info(self, action_is_valid: bool | None = None) -> dict[str, Any]:
        return self.make_info(
            task=TASK,
            admissible_actions=self.arms,
            won=self._hits == self.rounds,
            anchor=self._observation(),
            action_is_valid=action_is_valid,
            score=self._hits / self.rounds,
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed, options=options)
        self._round, self._hits = 0, 0
        return self._observation(), self._info()

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        name = coerce_action(action).strip().lower()
        valid = name in self.arms
        reward = float(name == self.target)
        self._hits += int(reward)
        self._round += 1
        info = self._info(action_is_valid=valid)
        return self._observation(), reward, self._round >= self.rounds, False, info

    def render(self) -> str | None:
        return self._observation() if self.render_mode == "ansi" else None

    def expert_action(self) -> str | None:
        """The target arm (the env is its own oracle)."""
        return self.target if self._round < self.rounds else None
