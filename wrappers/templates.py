"""The study's prompt templates, kept as data, and :func:`render_prompt`.

Holds :data:`TEMPLATES` (name → :class:`Template`) for ``alfworld``, ``webshop``, ``sokoban``
(text grid), ``sokoban_visual`` (an ``<image>`` placeholder) and ``tir_math``. Text between
``«`` and ``»`` is the history part: it is dropped on the first turn, when there is no history.
Fields are ``{name}`` placeholders filled by :func:`render_prompt`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from arlarena_envs.sokoban.render import LEGEND, tiny_rgb_array

__all__ = ["TEMPLATES", "Template", "format_history", "render_prompt"]

_HISTORY = (
    "«Prior to this step, you have already taken {step_count} step(s). Below are the most recent "
    "{history_length} observations and the corresponding actions you took: {action_history} »"
)
_FORMAT_TAIL = (
    "This reasoning process MUST be enclosed within <think> </think> tags. Once you've finished "
    "your reasoning, you should choose an admissible action for the current step and present it "
    "within <action> </action> tags."
)
_SOKOBAN_INTRO = (
    "You are an expert agent operating in the Sokoban environment. Your goal is to push all the "
    "boxes onto the target spots. Once all boxes are on the targets, you win! # Rules You can "
    "only push boxes. You can't pull them, so plan ahead to avoid getting stuck. You can't walk "
    "through or push boxes into walls. To avoid traps, do not push boxes into corners or against "
    "walls where they can't be moved again. "
)
_SOKOBAN_TAIL = (
    " Your admissible actions are [\"up\", \"down\", \"left\", \"right\"]. Now it's your turn to "
    "make a move (choose ONE action only for the current step). You should first reason "
    "step-by-step about the current situation - observe the positions of boxes and targets, plan "
    "a path to push a box toward a target, and avoid traps like corners or walls. " + _FORMAT_TAIL
)


@dataclass(frozen=True)
class Template:
    """One env's prompt: the text, how its admissible actions are listed and how an
    observation is shown (as is, unless a variant re-lays it out for a small model)."""

    text: str
    join_actions: Callable[[Sequence[str]], str]
    show_observation: Callable[[str], str] = str


def _quoted(sep: str) -> Callable[[Sequence[str]], str]:
    return lambda actions: sep.join(f"'{a}'" for a in actions)


TEMPLATES: dict[str, Template] = {
    "alfworld": Template(
        "You are an expert agent operating in the ALFRED Embodied Environment. Your task is to: "
        "{task_description} " + _HISTORY + "You are now at step {current_step} and your current "
        "observation is: {current_observation} Your admissible actions of the current situation "
        "are: [{admissible_actions}]. Now it's your turn to take an action. You should first "
        "reason step-by-step about the current situation. " + _FORMAT_TAIL,
        _quoted("\n "),
    ),
    "webshop": Template(
        "You are an expert autonomous agent operating in the WebShop e-commerce environment. Your "
        "task is to: {task_description}. " + _HISTORY + "You are now at step {current_step} and "
        "your current observation is: {current_observation}. Your admissible actions of the "
        "current situation are: [ {admissible_actions} ]. Now it's your turn to take one action "
        "for the current step. You should first reason step-by-step about the current situation, "
        "then think carefully which admissible action best advances the shopping goal. "
        + _FORMAT_TAIL,
        _quoted(",\n"),
    ),
    "sokoban": Template(
        _SOKOBAN_INTRO + "# Symbols on the Grid: " + LEGEND + ". # Current Step " + _HISTORY
        + "You are now at step {current_step} and your current observation is:\n"
        "{current_observation}\n" + _SOKOBAN_TAIL,
        _quoted(", "),
        tiny_rgb_array,
    ),
    "sokoban_visual": Template(
        _SOKOBAN_INTRO + "# Visual Elements in the Image: Character: A small, green alien-like "
        "figure with two antennae and black eyes. It represents you. Box: A yellow crate marked "
        "with an orange \"X\" across its front. It is the box you need to push. Target: A black "
        "tile outlined in red, with a small red diamond shape in the center. It marks the "
        "destination where a box should be pushed. # Current Step " + _HISTORY
        + "Your current observation is shown in the image: <image>" + _SOKOBAN_TAIL,
        _quoted(", "),
    ),
    "tir_math": Template(
        # The study's prompt, line for line (recipe/math_agent/config/math_agent_trainer.yaml,
        # data.prompt), then the question; in the chat form the response so far follows.
        "Solve the following problem step by step. You now have the ability to selectively write "
        "executable Python code to enhance your reasoning process. The Python code will be "
        "executed by an external sandbox, and the output (after \"Code execution result: \") is "
        "returned to aid your reasoning and help you arrive at the final answer. The Python code "
        "should be complete scripts, including necessary imports.\n\nCode Format:\nEach code "
        "snippet is wrapped between ```. You need to use `print()` to output intermediate "
        "results.\n\nAnswer Format:\nYou can use the `final_answer()` function in the code to "
        "return your final answer. For example, to answer the User Question: What is the result "
        "of the 5 + 3 + 1294.678?, you can write:\n```py\nanswer = 5 + 3 + 1294.678\n"
        "final_answer(answer)\n```\n\nYou can also use \\boxed to return your answer. The last "
        "part of your response should be:\n\\boxed{{'The final answer goes here.'}}\n\nUser "
        "Question:\n{task_description}{current_observation}",
        _quoted(", "),
    ),
}


def format_history(history: Sequence[tuple[str, str]], first_step: int) -> str:
    """``[Observation k: '<obs>', Action k: '<action>']`` lines, numbered from ``first_step``."""
    return "\n".join(
        f"[Observation {k}: '{obs}', Action {k}: '{action}']"
        for k, (obs, action) in enumerate(history, start=first_step)
    )


def render_prompt(
    name: str,
    *,
    task: str,
    observation: str,
    admissible: Sequence[str] = (),
    history: Sequence[tuple[str, str]] = (),
    step_count: int = 0,
    notice: str = "",
) -> str:
    """Fill template ``name`` for the current turn.

    Args:
        task: the instruction (``info["task"]``).
        observation: the current raw observation.
        admissible: the admissible actions (``info["admissible_actions"]``).
        history: the last (observation, action) pairs, oldest first; empty on the first turn.
        step_count: how many steps were taken before this one.
        notice: a line shown before the current observation (as is, not re-laid out).
    """
    if name not in TEMPLATES:
        raise KeyError(f"no prompt template {name!r}; known: {', '.join(sorted(TEMPLATES))}")
    template = TEMPLATES[name]
    text = template.text
    head, sep, rest = text.partition("«")
    if sep:
        middle, _, tail = rest.partition("»")
        text = head + (middle if history else "") + tail
    return text.format(
        task_description=task,
        step_count=step_count,
        history_length=len(history),
        action_history=format_history(
            [(template.show_observation(obs), action) for obs, action in history],
            step_count - len(history) + 1,
        ),
        current_step=step_count + 1,
        current_observation=notice + template.show_observation(observation),
        admissible_actions=template.join_actions(admissible),
    )
