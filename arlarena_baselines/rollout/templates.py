"""Compact prompt variants for cheap training runs, registered beside the study's templates.

Holds :data:`COMPACT_TEMPLATES` (added to :data:`wrappers.templates.TEMPLATES` on import) and
:func:`check_template`. The study's Sokoban prompt is ~500 SmolLM2 tokens on the first turn
and ~800 with two history pairs (``docs/prompts.md``); on a CPU, prefill and backward over it
dominate a training step. ``sokoban_compact`` keeps what a policy needs (the goal, the legend,
the grid, the admissible actions and the required format) in ~120 tokens,
with the grid's cells separated by spaces: SmolLM2's tokenizer merges runs of ``_`` into one
token (``#__P_#`` is 4 tokens), which hides the columns from a small model trained from scratch;
spaced, every cell is one token. Responses are judged by the study's Sokoban check, as with the
study's template. Select it with ``rollout.template: sokoban_compact``; results with it are not
comparable to the study's prompt.

``alfworld_compact`` keeps the task, the current observation (without TextWorld's welcome
banner and the task line, which the prompt shows once) and the admissible actions, no preamble,
and the history only where ``history_length`` asks for it (the recipe's: none): 239 SmolLM2
tokens a turn on average on the expert's path (chat header included) against the study's 503
with two history pairs (30 games). Responses are judged by the study's ALFWorld check. Not
the study's template: results name it.
"""

from __future__ import annotations

from arlarena_envs.sokoban.render import LEGEND
from wrappers.templates import TEMPLATES, Template

__all__ = ["COMPACT_TEMPLATES", "alfworld_observation", "check_template", "spaced_grid"]


def spaced_grid(grid: str) -> str:
    r"""The grid with a space between cells, one cell per token.

    >>> spaced_grid("#_P#\n#XO#")
    '# _ P #\n# X O #'
    """
    return "\n".join(" ".join(row) for row in grid.split("\n"))


_WELCOME = "-= Welcome to TextWorld, ALFRED! =-"
_TASK_LINE = "Your task is to: "


def alfworld_observation(observation: str) -> str:
    """An ALFWorld observation without the welcome banner and the task line (the first
    observation carries both), blank lines collapsed.

    >>> alfworld_observation("-= Welcome to TextWorld, ALFRED! =-\\n\\nYou are in a room.\\n\\n"
    ...                      "Your task is to: put a mug in shelf.")
    'You are in a room.'
    """
    text = observation.removeprefix(_WELCOME).partition(_TASK_LINE)[0]
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


COMPACT_TEMPLATES: dict[str, Template] = {
    "sokoban_compact": Template(
        "Sokoban: {task_description} Symbols: " + LEGEND + ". «Prior to this step: "
        "{action_history} »Step {current_step}. Grid:\n{current_observation}\nAdmissible "
        "actions: [{admissible_actions}]. Answer as <think>...</think><action>...</action>.",
        lambda actions: ", ".join(actions),
        spaced_grid,
        check="sokoban",
    ),
    "alfworld_compact": Template(
        "ALFWorld. Task: {task_description}\n«Prior to this step: {action_history}\n»"
        "Observation: {current_observation}\nAdmissible "
        "actions: [{admissible_actions}]. Answer as <think>...</think><action>...</action>.",
        lambda actions: ", ".join(actions),
        alfworld_observation,
        check="alfworld",
    ),
}

for _name, _template in COMPACT_TEMPLATES.items():
    TEMPLATES.setdefault(_name, _template)


def check_template(name: str) -> None:
    """Raise a ``KeyError`` listing the known templates if ``name`` is not one of them."""
    if name not in TEMPLATES:
        raise KeyError(f"no prompt template {name!r}; known: {', '.join(sorted(TEMPLATES))}")
