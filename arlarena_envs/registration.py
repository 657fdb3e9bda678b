"""Gymnasium ids of the ARLArena environments: the one place ids, turn limits and the study's
per-env response budgets and evaluation sampling are defined.

Holds :class:`Sampling`, :data:`ENV_SPECS` (id → entry point, turn limit, kwargs, sampling),
:data:`ENV_ALIASES` (the short names the CLI takes, e.g. ``sokoban``), :func:`resolve_env_id`,
:func:`env_sampling` and :func:`register_envs`, which ``import arlarena_envs`` calls. Entry
points are strings, so registering imports no environment module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

__all__ = [
    "ENV_ALIASES",
    "ENV_SPECS",
    "EnvSpec",
    "Sampling",
    "check_env_kwargs",
    "describe_tasks",
    "env_family",
    "env_sampling",
    "env_splits",
    "is_visual",
    "register_envs",
    "resolve_env_id",
]


@dataclass(frozen=True)
class Sampling:
    """An env's response budget and evaluation sampling, from the study's example scripts.

    Attributes:
        max_tokens: tokens per response (``data.max_response_length``).
        temperature, top_p: evaluation sampling (``rollout.val_kwargs``).
        top_k: evaluation top-k; ``0`` means none (the study's ``-1`` for vLLM).
    """

    max_tokens: int
    temperature: float
    top_p: float = 1.0
    top_k: int = 0


# examples/embody_agent_trainer/train_alfworld_grpo.sh:67,92-94 and
# examples/shop_agent_trainer/Qwen3_4B/train_grpo.sh:40,94-96: 512 tokens, T 0.6, p 0.95, k 20.
_STUDY_TEXT = Sampling(512, 0.6, 0.95, 20)
# examples/game_agent_trainer/train_gigpo_ablation.sh:64,89 (500 tokens, T 0.4); top-p and
# top-k stay recipe/game_agent/config/game_.yaml:146-147's (1.0, -1).
_STUDY_SOKOBAN = Sampling(500, 0.4)
# examples/math_trainer/4B/train_grpo.sh:23,26 (T 0.6, 4,096 tokens);
# recipe/math_agent/config/math_agent_trainer.yaml:60-61 (top-k -1, top-p 0.7).
_STUDY_MATH = Sampling(4096, 0.6, 0.7)


@dataclass(frozen=True)
class EnvSpec:
    """What :func:`register_envs` passes to ``gymnasium.register`` for one id, the env's
    :class:`Sampling` (what ``arlarena eval`` uses unless told otherwise), and the reset options
    of its training and held-out tasks.

    Attributes:
        training: reset options of the tasks training draws (what the trainer puts under
            ``rollout.reset_options``).
        heldout: reset options of the held-out tasks, which share no content with any task
            ``training`` can draw (``tests/test_heldout_split.py``); ``None``: the env has no
            held-out tasks (the bandit's one task).
        default_tasks: what ``reset`` without options plays, in words (what ``arlarena eval``
            says it plays when given no split).
    """

    entry_point: str
    max_episode_steps: int
    kwargs: dict[str, Any] = field(default_factory=dict)
    sampling: Sampling = _STUDY_TEXT
    training: dict[str, Any] = field(default_factory=dict)
    heldout: dict[str, Any] | None = None
    default_tasks: str = "its training split"


_SOKOBAN = "arlarena_envs.sokoban.env:SokobanEnv"
# Sokoban levels are split by content (arlarena_envs/sokoban/split.py); the other envs by task set.
_SOKOBAN_SPLITS = {"training": {"split": "train"}, "heldout": {"split": "eval"},
                   "default_tasks": "every level, split all"}
_WEBSHOP_SPLITS = {"training": {"split": "train"}, "heldout": {"split": "eval"}}

ENV_SPECS: dict[str, EnvSpec] = {
    # Sokoban: the 6x6 one-box room of the study is the default; harder rooms get longer budgets.
    "ARLArena/Sokoban-v0": EnvSpec(
        _SOKOBAN, 15, {"dim": (6, 6), "num_boxes": 1}, _STUDY_SOKOBAN, **_SOKOBAN_SPLITS
    ),
    "ARLArena/Sokoban-Visual-v0": EnvSpec(
        _SOKOBAN, 15, {"dim": (6, 6), "num_boxes": 1, "visual": True}, _STUDY_SOKOBAN,
        **_SOKOBAN_SPLITS,
    ),
    "ARLArena/Sokoban-6x6-2b-v0": EnvSpec(
        _SOKOBAN, 30, {"dim": (6, 6), "num_boxes": 2, "max_solution_length": 30}, _STUDY_SOKOBAN,
        **_SOKOBAN_SPLITS,
    ),
    "ARLArena/Sokoban-8x8-2b-v0": EnvSpec(
        _SOKOBAN, 40, {"dim": (8, 8), "num_boxes": 2, "max_solution_length": 40}, _STUDY_SOKOBAN,
        **_SOKOBAN_SPLITS,
    ),
    # ALFWorld's unseen scenes; their content key is the ALFWorld task's (panels/content.py).
    "ARLArena/ALFWorld-v0": EnvSpec(
        "arlarena_envs.alfworld.env:ALFWorldEnv", 50, training={"split": "train"},
        heldout={"split": "eval_out_of_distribution"},
    ),
    # ARLArena's CPU-budget variant, not the study's: 20 turns, the training split parted by
    # content into games to fit and validation games (alfworld/compact.py).
    "ARLArena/ALFWorld-Compact-v0": EnvSpec(
        "arlarena_envs.alfworld.compact:CompactALFWorldEnv", 20,
        training={"split": "train", "part": "fit"},
        heldout={"split": "eval_out_of_distribution"},
    ),
    "ARLArena/WebShop-v0": EnvSpec("arlarena_envs.webshop.env:WebShopEnv", 15, **_WEBSHOP_SPLITS),
    "ARLArena/WebShop-Small-v0": EnvSpec(
        "arlarena_envs.webshop.env:WebShopEnv", 15, {"products": 1000}, **_WEBSHOP_SPLITS
    ),
    # The generated training set skips every problem of gen_eval (tir_math/data.py).
    "ARLArena/TIRMath-v0": EnvSpec(
        "arlarena_envs.tir_math.env:TIRMathEnv", 5, sampling=_STUDY_MATH,
        training={"split": "train"}, heldout={"split": "gen_eval"},
    ),
    # ARLArena's toy task, not the study's: the short budget of ARLArena's earlier CLI default.
    "ARLArena/Bandit-v0": EnvSpec(
        "arlarena_envs.bandit.env:BanditEnv", 10, sampling=Sampling(256, 0.6, 0.95, 20),
        default_tasks="its one task",
    ),
}

ENV_ALIASES: dict[str, str] = {
    "sokoban": "ARLArena/Sokoban-v0",
    "alfworld": "ARLArena/ALFWorld-v0",
    "webshop": "ARLArena/WebShop-v0",
    "math": "ARLArena/TIRMath-v0",
}


def resolve_env_id(name: str) -> str:
    """Map a CLI name (``sokoban``) or a full id to a registered gymnasium id."""
    env_id = ENV_ALIASES.get(name.lower(), name)
    if env_id not in ENV_SPECS:
        known = ", ".join(sorted(ENV_ALIASES) + sorted(ENV_SPECS))
        raise ValueError(f"unknown environment {name!r}; known: {known}")
    return env_id


def env_sampling(name: str) -> Sampling:
    """The :class:`Sampling` of a CLI name or id (the study's for its envs).

    >>> env_sampling("sokoban")
    Sampling(max_tokens=500, temperature=0.4, top_p=1.0, top_k=0)
    """
    return ENV_SPECS[resolve_env_id(name)].sampling


def env_family(name: str) -> str:
    """The ``arlarena_envs`` sub-package of a CLI name's or id's env (``sokoban``, ``webshop``).

    >>> env_family("ARLArena/WebShop-Small-v0")
    'webshop'
    """
    return ENV_SPECS[resolve_env_id(name)].entry_point.split(".")[1]


def is_visual(name: str, kwargs: dict[str, Any] | None = None) -> bool:
    """Whether the env of a CLI name or id (with ``kwargs``) shows its state as an image that
    its prompt refers to (``Sokoban-Visual-v0``, ``visual=True``)."""
    return bool({**ENV_SPECS[resolve_env_id(name)].kwargs, **(kwargs or {})}.get("visual"))


def env_splits(name: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The reset options of the training and held-out tasks of a CLI name or id.

    >>> env_splits("sokoban")
    ({'split': 'train'}, {'split': 'eval'})
    """
    spec = ENV_SPECS[resolve_env_id(name)]
    return dict(spec.training), None if spec.heldout is None else dict(spec.heldout)


_MAKE_KWARGS = frozenset({"max_episode_steps", "render_mode", "disable_env_checker",
                          "autoreset", "apply_api_compatibility"})
"""Keyword arguments ``gymnasium.make`` takes for itself (any env)."""


def check_env_kwargs(name: str, kwargs: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the keys of ``kwargs`` that neither ``gymnasium.make`` nor
    the env's constructor takes (checked before anything is built)."""
    import importlib
    import inspect

    module, _, attribute = ENV_SPECS[resolve_env_id(name)].entry_point.partition(":")
    params = inspect.signature(getattr(importlib.import_module(module), attribute)).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    known = _MAKE_KWARGS | set(params)
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise ValueError(f"{resolve_env_id(name)} takes no env kwarg {', '.join(unknown)}; "
                         f"known: {', '.join(sorted(known))}")


def describe_tasks(config: Any) -> str:
    """One line saying which tasks an evaluation plays: the env, its split (the reset options,
    else the env's default, which for ALFWorld, WebShop and TIR Math is the training split) and
    seeds."""
    spec = ENV_SPECS[resolve_env_id(config.env)]
    options = dict(config.reset_options)
    if options:
        which = f"reset options {options}"
    else:
        which = f"the env's default tasks: {spec.default_tasks}"
        if spec.heldout is not None:
            which += f" (held out: {spec.heldout})"
    last = config.seed + config.episodes - 1
    return f"{resolve_env_id(config.env)}, {which}, seeds {config.seed}..{last}"


def register_envs() -> None:
    """Register every id of :data:`ENV_SPECS` with gymnasium (idempotent)."""
    for env_id, spec in ENV_SPECS.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point=spec.entry_point,
            max_episode_steps=spec.max_episode_steps,
            kwargs=dict(spec.kwargs),
            disable_env_checker=True,
        )
