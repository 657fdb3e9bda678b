"""The environment variables that configure the agent and the plugin in every Ray worker.

OpenRLHF hands the agent nothing but its file path, and a Ray worker setup hook takes no
arguments, so both read their settings from the environment; ``scripts/openrlhf/train.sh``
sets these job-wide through ``ray job submit --runtime-env-json '{"env_vars": ...}'``:

- ``ARLARENA_ENV`` (required by the agent): env CLI name or gymnasium id (``sokoban``);
- ``ARLARENA_ENV_KWARGS``: JSON keyword arguments for ``gymnasium.make`` (default ``{}``);
- ``ARLARENA_HISTORY_LENGTH``: (observation, action) pairs in each prompt (default 0: the
  OpenRLHF conversation already holds every earlier turn);
- ``ARLARENA_FORMAT_PENALTY``: reward lost by a malformed response (default 0.1);
- ``ARLARENA_TEMPLATE``: a prompt template replacing the env's own (default: the env's);
- ``ARLARENA_MAX_TURNS``: end episodes after this many turns (default: the env's limit);
- ``ARLARENA_METHOD``: a method of :data:`~arlarena_baselines.algos.METHODS`; unset, the
  plugin leaves OpenRLHF's loss and advantages alone and the agent sends no per-turn columns;
- ``ARLARENA_CHAT_TEMPLATE_KWARGS``: JSON keyword arguments of the chat template
  (``{"enable_thinking": false}``; default ``{}``);
- ``ARLARENA_METHOD_OVERRIDES``: JSON changes to the method's hyperparameters
  (``{"gigpo_mode": "mean_norm"}``);
- ``ARLARENA_STEPS``: training steps; the run stops after that many (default: when the task
  dataset runs out, as OpenRLHF does);
- ``ARLARENA_EVAL_TOP_P``, ``ARLARENA_EVAL_TOP_K``: nucleus and top-k sampling of the periodic
  evaluation (OpenRLHF has flags for its temperature only; default: the rollout's).

Each task (a row of the prompt dataset) names its env seed in its label: ``{"seed": 17}``,
optionally with reset ``"options"``, or a bare integer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from arlarena_baselines.algos import Method, get_method
from arlarena_baselines.rollout.envs import EnvFactory

__all__ = [
    "CHAT_TEMPLATE_KWARGS",
    "ENV",
    "ENV_KWARGS",
    "EVAL_TOP_K",
    "EVAL_TOP_P",
    "FORMAT_PENALTY",
    "HISTORY_LENGTH",
    "MAX_TURNS",
    "METHOD",
    "METHOD_OVERRIDES",
    "STEPS",
    "TEMPLATE",
    "AgentSettings",
    "RunSettings",
    "Task",
    "method_from_environ",
    "task_from_label",
]

ENV = "ARLARENA_ENV"
ENV_KWARGS = "ARLARENA_ENV_KWARGS"
HISTORY_LENGTH = "ARLARENA_HISTORY_LENGTH"
FORMAT_PENALTY = "ARLARENA_FORMAT_PENALTY"
TEMPLATE = "ARLARENA_TEMPLATE"
MAX_TURNS = "ARLARENA_MAX_TURNS"
METHOD = "ARLARENA_METHOD"
METHOD_OVERRIDES = "ARLARENA_METHOD_OVERRIDES"
STEPS = "ARLARENA_STEPS"
EVAL_TOP_P = "ARLARENA_EVAL_TOP_P"
EVAL_TOP_K = "ARLARENA_EVAL_TOP_K"
CHAT_TEMPLATE_KWARGS = "ARLARENA_CHAT_TEMPLATE_KWARGS"


def _json_object(environ: Mapping[str, str], name: str) -> dict[str, Any]:
    value = json.loads(environ.get(name) or "{}")
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a JSON object, got {value!r}")
    return value


@dataclass(frozen=True)
class AgentSettings:
    """What the agent builds each episode: the env recipe, the turn limit, the columns it logs,
    the chat template's keyword arguments.

    >>> s = AgentSettings.from_environ({"ARLARENA_ENV": "sokoban", "ARLARENA_MAX_TURNS": "8"})
    >>> s.factory.env, s.factory.history_length, s.max_turns, s.turn_columns
    ('sokoban', 0, 8, False)
    """

    factory: EnvFactory
    max_turns: int | None = None
    turn_columns: bool = False
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> AgentSettings:
        """Read the ``ARLARENA_*`` variables (see the module docstring)."""
        env = environ.get(ENV)
        if not env:
            raise ValueError(f"set {ENV} to the env the OpenRLHF agent plays (e.g. sokoban)")
        factory = EnvFactory(
            env=env,
            env_kwargs=_json_object(environ, ENV_KWARGS),
            history_length=int(environ.get(HISTORY_LENGTH) or 0),
            format_penalty=float(environ.get(FORMAT_PENALTY) or 0.1),
            template=environ.get(TEMPLATE) or None,
        )
        max_turns = environ.get(MAX_TURNS)
        return cls(factory, int(max_turns) if max_turns else None, bool(environ.get(METHOD)),
                   _json_object(environ, CHAT_TEMPLATE_KWARGS))


@dataclass(frozen=True)
class RunSettings:
    """What the trainer-side patches read: the step budget and the evaluation's sampling.

    >>> RunSettings.from_environ({"ARLARENA_STEPS": "150", "ARLARENA_EVAL_TOP_K": "20"})
    RunSettings(steps=150, eval_top_p=None, eval_top_k=20)
    """

    steps: int | None = None
    eval_top_p: float | None = None
    eval_top_k: int | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> RunSettings:
        """Read ``ARLARENA_STEPS``, ``ARLARENA_EVAL_TOP_P`` and ``ARLARENA_EVAL_TOP_K``."""
        def read(name: str, kind: type) -> Any:
            value = environ.get(name)
            return kind(value) if value else None

        return cls(read(STEPS, int), read(EVAL_TOP_P, float), read(EVAL_TOP_K, int))


def method_from_environ(environ: Mapping[str, str] = os.environ) -> Method | None:
    """The method named by ``ARLARENA_METHOD`` with ``ARLARENA_METHOD_OVERRIDES``, or ``None``.

    >>> method_from_environ({"ARLARENA_METHOD": "sampo",
    ...                      "ARLARENA_METHOD_OVERRIDES": '{"gigpo_mode": "mean_norm"}'}).gigpo_mode
    'mean_norm'
    """
    name = environ.get(METHOD)
    if not name:
        return None
    return get_method(name).with_overrides(**_json_object(environ, METHOD_OVERRIDES))


@dataclass(frozen=True)
class Task:
    """One row of the prompt dataset: the env seed and reset options of its episodes."""

    seed: int
    options: dict[str, Any] = field(default_factory=dict)

    def label(self) -> str:
        """The dataset label that :func:`task_from_label` reads back."""
        return json.dumps({"seed": self.seed, "options": self.options} if self.options
                          else {"seed": self.seed})


def task_from_label(label: Any) -> Task:
    """The :class:`Task` of a dataset label: ``{"seed": 17, "options": {...}}`` or ``17``.

    >>> task_from_label('{"seed": 4, "options": {"split": "eval"}}')
    Task(seed=4, options={'split': 'eval'})
    >>> task_from_label("12")
    Task(seed=12, options={})
    """
    try:
        data = json.loads(label) if isinstance(label, str) else label
    except json.JSONDecodeError:
        data = None
    if isinstance(data, int) and not isinstance(data, bool):
        return Task(data)
    if isinstance(data, dict) and isinstance(data.get("seed"), int):
        return Task(data["seed"], dict(data.get("options") or {}))
    raise ValueError(f'a task label is {{"seed": int, "options": {{...}}}} or an int: {label!r}')
