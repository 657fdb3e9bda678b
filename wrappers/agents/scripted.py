"""Scripted agents: uniform random over admissible actions, and the env's expert.

Both answer in the strict format, so the expert's trajectories are valid behaviour-cloning data.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from arlarena_envs.base import TextEnv
from wrappers.agents.base import Agent, AgentRequest, register_agent, stream_seed
from wrappers.format import format_response

__all__ = ["ExpertAgent", "RandomAgent", "inadmissible_move", "planned_response"]

_PLAN = "Following the shortest known plan, the next step is '{action}'."
_DEVIATION = " A random move instead."
_OFF_PLAN = re.compile(  # the two sentences above, the plan's step captured
    re.escape(_PLAN + _DEVIATION).replace(re.escape("{action}"), "(.+?)"))


@register_agent("random")
class RandomAgent(Agent):
    """Picks a uniformly random admissible action; each draw comes from the stream of the
    request's episode and turn (:func:`~wrappers.agents.base.stream_seed`), so an episode
    plays the same whatever its batch and after a resume."""

    name = "random"

    def __init__(self, seed: int = 0, **_: object) -> None:
        self.seed = seed

    def act(self, requests: Sequence[AgentRequest]) -> list[str]:
        responses = []
        for request in requests:
            actions = list(request.info.get("admissible_actions") or [])
            rng = np.random.default_rng(stream_seed(self.seed, request.episode_id, request.turn))
            action = actions[int(rng.integers(len(actions)))] if actions else "look"
            responses.append(format_response("I pick an admissible action at random.", action))
        return responses


@register_agent("expert")
class ExpertAgent(Agent):
    """Answers with the env's privileged expert move (``env.unwrapped.expert_action()``).

    With ``epsilon > 0`` it is a noisy teacher: each turn, with probability ``epsilon``, it
    takes a uniformly random admissible action instead (drawn from the episode's stream, so
    runs repeat), and a random one where no plan is left (a deadlock of its own making). Its
    successful episodes are good but not optimal, like the study's SFT data (the model's own
    high-scoring rollouts), which leaves RL room above the cloned policy.

    With ``invalid > 0``, on a turn without a random move it makes, with that probability, a
    move the env rejects (:func:`inadmissible_move`, shaped like the plan's step). A student
    rejects many of its moves, so most of its states follow a rejection (ALFWorld's "Nothing
    happens."); demonstrations without rejections never show it one. Clone such demonstrations
    with their plan (``sft.plan_labels``), so the student clones the recovery, not the move. On
    ALFWorld this taught the wrong recovery: the plan's step with a wrong number is not the
    kind of move a student gets rejected, and its recovery (the same step, number put right)
    is a retry (docs/learn-alfworld.md).

    It needs the env handle in each request, so it drives in-process envs only.
    """

    name = "expert"

    def __init__(self, epsilon: float = 0.0, invalid: float = 0.0, seed: int = 0,
                 **_: object) -> None:
        for name, value in (("epsilon", epsilon), ("invalid", invalid)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        self.epsilon = float(epsilon)
        self.invalid = float(invalid)
        self.seed = seed

    def settings(self) -> dict[str, Any]:
        # `invalid` only where set: results written before it existed keep their digest
        extra = {"invalid": self.invalid} if self.invalid else {}
        return {**super().settings(), "epsilon": self.epsilon, **extra}

    def act(self, requests: Sequence[AgentRequest]) -> list[str]:
        responses = []
        for request in requests:
            if request.env is None:
                raise ValueError("the expert agent reads its env, so its envs must step in "
                                 "this process (env workers 0)")
            unwrapped = request.env.unwrapped
            if type(unwrapped).expert_action is TextEnv.expert_action:
                name = request.env.spec.id if request.env.spec else type(request.env).__name__
                raise ValueError(f"{name} has no expert")
            plan = action = unwrapped.expert_action()
            actions = list(request.info.get("admissible_actions") or [])
            if (self.epsilon or self.invalid) and actions:
                # A random move with probability epsilon, or where no plan is left; else a
                # rejected move with probability invalid.
                rng = np.random.default_rng(
                    stream_seed(self.seed, request.episode_id, request.turn)
                )
                if action is None or rng.random() < self.epsilon:
                    action = actions[int(rng.integers(len(actions)))]
                elif self.invalid and rng.random() < self.invalid:
                    action = inadmissible_move(action, actions)
            if action is None:
                raise ValueError(f"the expert has no move and no admissible action to take: "
                                 f"{request.info.get('task', '')!r}")
            if plan is None:
                think = "No plan is left: a random move."
            else:  # a move off the plan says so, and still names the plan's step
                think = _PLAN.format(action=plan) + ("" if action == plan else _DEVIATION)
            responses.append(format_response(think, action))
        return responses


def inadmissible_move(step: str, actions: Sequence[str]) -> str:
    """A move not among ``actions``, shaped like ``step``: its last number raised past every
    number the actions hold, or that number appended where it has none.

    >>> inadmissible_move("go to drawer 2", ["go to drawer 1", "go to drawer 2", "look"])
    'go to drawer 3'
    >>> inadmissible_move("left", ["left", "right"])
    'left 1'
    """
    top = str(max((int(n) for a in actions for n in re.findall(r"\d+", a)), default=0) + 1)
    numbers = list(re.finditer(r"\d+", step))
    # Its number `top` is larger than any number of the actions, so it is none of them.
    if not numbers:
        return f"{step} {top}"
    return step[:numbers[-1].start()] + top + step[numbers[-1].end():]


def planned_response(response: str) -> str:
    """The reply the expert's plan named, for a reply of :class:`ExpertAgent`: a noisy
    expert's random move becomes the plan's step its thinking names; a reply on the plan, or
    one without a plan, is returned as it is.

    Cloning these (``sft.plan_labels``) puts the noise in the states the demonstrations visit,
    not in the labels (DART): the student sees the expert recover from off-plan states without
    learning to make random moves itself.

    >>> off = format_response(_PLAN.format(action="go to desk 1") + _DEVIATION, "look")
    >>> planned_response(off) == format_response(_PLAN.format(action="go to desk 1"),
    ...                                          "go to desk 1")
    True
    """
    match = _OFF_PLAN.search(response)
    if match is None:
        return response
    plan = match.group(1)
    return format_response(_PLAN.format(action=plan), plan)
