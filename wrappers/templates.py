"""The study's prompt templates, kept as data, and :func:`render_prompt`.

Holds :data:`TEMPLATES` (name → :class:`Template`) for ``alfworld``, ``webshop``, ``sokoban``
(text grid), ``sokoban_visual`` (an ``<image>`` placeholder), ``tir_math`` and ``bandit``, and
:func:`format_history`. The texts are the study's (its ``agent_system/environments/prompts/``,
filled as its ``env_manager.py`` fills them; ``docs/prompts.md`` shows each one), line breaks and
typos included ("observaitons"), because models were trained on exactly that text: a
no-history text for the first turn (and for ``history_length=0``), a text with the history after
it. Fields are ``{name}`` placeholders. A template with a single text may mark its history part
with ``«`` and ``»``: it is dropped when there is no history.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from arlarena_envs.sokoban.render import tiny_rgb_array
from arlarena_envs.webshop.textmode import without_instruction

__all__ = ["TEMPLATES", "Template", "format_history", "render_prompt"]


@dataclass(frozen=True)
class Template:
    """One env's prompt and how its parts are shown.

    Attributes:
        text: the prompt of a turn without history (the study's ``*_NO_HIS`` text).
        join_actions: how the admissible actions are listed.
        show_observation: how an observation (current or past) is shown.
        later: the prompt of a turn with history; ``None``: ``text`` on every turn.
        show_action: how a past action is shown in the history.
        max_chars: a prompt longer than this is rendered from ``text`` (no history) instead.
        check: the name of the env's format check in :data:`wrappers.format.FORMAT_CHECKS`
            (the study's projection of the env; ``strict`` where the study has none).
    """

    text: str
    join_actions: Callable[[Sequence[str]], str]
    show_observation: Callable[[str], str] = str
    later: str | None = None
    show_action: Callable[[str], str] = str
    max_chars: int | None = None
    check: str = "strict"


def _quoted(sep: str, end: str = "") -> Callable[[Sequence[str]], str]:
    return lambda actions: sep.join(f"'{a}'{end}" for a in actions)


def _history(observations: str) -> str:
    return (
        "Prior to this step, you have already taken {step_count} step(s). Below are the most "
        f"recent {{history_length}} {observations} and the corresponding actions you took: "
        "{action_history}\n"
    )


def _sokoban_action(action: str) -> str:
    """The study's name of an executed move; anything else ran as its invalid action."""
    return {"up": "Up", "down": "Down", "left": "Left", "right": "Right"}.get(action, "Still")


_REASON = (
    "This reasoning process MUST be enclosed within <think> </think> tags. \nOnce you've finished "
    "your reasoning, you should choose an admissible action for current step and present it "
    "within <action> </action> tags.\n"
)
_ALFWORLD = "\nYou are an expert agent operating in the ALFRED Embodied Environment."
_ALFWORLD_TAIL = (
    "Your admissible actions of the current situation are: [{admissible_actions}].\n\nNow it's "
    "your turn to take an action.\nYou should first reason step-by-step about the current "
    "situation. " + _REASON
)
_WEBSHOP = (
    "\nYou are an expert autonomous agent operating in the WebShop e\u2011commerce environment."
)
_WEBSHOP_TAIL = (
    "Your admissible actions of the current situation are: \n[\n{admissible_actions}\n].\n\n"
    "Now it's your turn to take one action for the current step.\nYou should first reason "
    "step-by-step about the current situation, then think carefully which admissible action "
    "best advances the shopping goal. " + _REASON
)
_PUSH_RULES = (
    "# Rules\nYou can only push boxes. You can't pull them, so plan ahead to avoid getting "
    "stuck.\nYou can't walk through or push boxes into walls{walls}.\nTo avoid traps, do not "
    "push boxes into corners or against walls where they can't be moved again.\n\n"
)
_SOKOBAN = (
    "\nYou are an expert agent operating in the Sokoban environment.\n\n# Symbols and Their "
    "Meaning\n- Walls (`#`): These block movement. You can't move through or push anything into "
    "walls.\n- Floor (`_`): Open spaces where you can walk and move boxes.\n- Targets (`O`): The "
    "spots where boxes need to go.\n- Boxes (`X`): These are what you need to push onto the "
    "targets.\n- Player (`P`): That's you! You'll move around the grid to push boxes.\n- Box on "
    "Target (`\u221a`): A box successfully placed on a target.\n- Player on Target (`S`): You "
    "standing on a target.\n\n# Your Goal\nYour goal is to push all the boxes (`X`) onto the "
    "target spots (`O`). Once all boxes are on the targets, you win!\n\n"
    + _PUSH_RULES.replace("{walls}", " (`#`)") + "# Current Step\n"
)
_SOKOBAN_TAIL = (
    'Your admissible actions are ["up", "down", "left", "right"].\n\nNow it\'s your turn to make '
    "a move (choose ONE action only for the current step).\nYou should first reason "
    "step-by-step about the current situation \u2014 observe the positions of boxes and targets, "
    "plan a path to push a box toward a target, and avoid traps like corners or walls. " + _REASON
)

TEMPLATES: dict[str, Template] = {
    "alfworld": Template(
        _ALFWORLD + "\nYour current observation is: {current_observation}\n" + _ALFWORLD_TAIL,
        _quoted("\n "),
        later=_ALFWORLD + " Your task is to: {task_description}\n" + _history("observaitons")
        + "You are now at step {current_step} and your current observation is: "
        "{current_observation}\n" + _ALFWORLD_TAIL,
        check="alfworld",
    ),
    "webshop": Template(
        _WEBSHOP + " \nYour task is to: {task_description}.\nYour current observation is: "
        "{current_observation}.\n" + _WEBSHOP_TAIL,
        _quoted("\n", ","),
        without_instruction,
        later=_WEBSHOP + "\nYour task is to: {task_description}.\n" + _history("observations")
        + "You are now at step {current_step} and your current observation is: "
        "{current_observation}.\n" + _WEBSHOP_TAIL,
        max_chars=13_000,
        check="webshop",
    ),
    "sokoban": Template(
        _SOKOBAN + "Your current observation is:\n{current_observation}\n" + _SOKOBAN_TAIL,
        _quoted(", "),
        tiny_rgb_array,
        later=_SOKOBAN + _history("observaitons") + "You are now at step {current_step} and your "
        "current observation is:\n{current_observation}\n" + _SOKOBAN_TAIL,
        show_action=_sokoban_action,
        check="sokoban",
    ),
    "sokoban_visual": Template(
        "\nYou are an expert agent operating in the Sokoban environment. Your goal is to push all "
        "the boxes onto the target spots. Once all boxes are on the targets, you win!\n\n"
        + _PUSH_RULES.replace("{walls}", "") + "# Visual Elements in the Image:\nCharacter: A "
        "small, green alien-like figure with two antennae and black eyes. It represents you.\n"
        'Box: A yellow crate marked with an orange "X" across its front. It is the box you need '
        "to push.\nTarget: A black tile outlined in red, with a small red diamond shape in the "
        "center. It marks the destination where a box should be pushed.\n\n# Current Step\nYour "
        "current observation is shown in the image: <image>\n" + _SOKOBAN_TAIL,
        _quoted(", "),
        check="sokoban",
    ),
    "tir_math": Template(
        # The study's prompt, line for line (recipe/math_agent/config/math_agent_trainer.yaml,
        # data.prompt), then the observation: the question, then the response so far (the
        # chat form's assistant turn).
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
        "Question:\n{current_observation}",
        _quoted(", "),
    ),
    "bandit": Template(  # ARLArena/Bandit-v0's, short so that tiny models see short prompts
        "You play a bandit. Your task is to: {task_description} «Prior to this step, you have "
        "already taken {step_count} step(s): {action_history} »Now: {current_observation} "
        "Your admissible actions are [{admissible_actions}]. Think inside <think> </think> "
        "tags, then give one admissible action inside <action> </action> tags.",
        _quoted(", "),
    ),
}


def format_history(
    history: Sequence[tuple[str, str]], first_step: int, show_action: Callable[[str], str] = str
) -> str:
    """``[Observation k: '<obs>', Action k: '<action>']`` lines, numbered from ``first_step``."""
    return "\n".join(
        f"[Observation {k}: '{obs}', Action {k}: '{show_action(action)}']"
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
    text = template.later if history and template.later is not None else template.text
    head, sep, rest = text.partition("«")
    if sep:
        middle, _, tail = rest.partition("»")
        text = head + (middle if history else "") + tail
    prompt = text.format(
        task_description=task,
        step_count=step_count,
        history_length=len(history),
        action_history=format_history(
            [(template.show_observation(obs), action) for obs, action in history],
            step_count - len(history) + 1,
            template.show_action,
        ),
        current_step=step_count + 1,
        current_observation=notice + template.show_observation(observation),
        admissible_actions=template.join_actions(admissible),
    )
    if history and template.max_chars is not None and len(prompt) > template.max_chars:
        return render_prompt(
            name, task=task, observation=observation, admissible=admissible, notice=notice
        )
    return prompt
