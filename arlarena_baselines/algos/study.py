"""Each method as the study ran it, per env: every value with the line of code it comes from.

The study (WillDreamer/ARLArena, read at commit ``dc1da9f``) sets a method's hyperparameters in
one launch script per method and env, on top of its recipe config and the defaults of its loss
and advantage functions. :data:`STUDY_SETTINGS` writes them down (method → env → ``Method``
field → :class:`Setting`), each with its source ``path:line`` in that repository, or
``paper`` where the repository has no script (SAMPO, DAPO_GiGPO), or ``ARLArena`` for a choice
the study's code leaves open (GRPO_SM, see below). This is the one place the per-env settings
live: :data:`~.methods.METHODS` takes the ALFWorld column, :func:`~.methods.study_method` any
column, and ``configs/rl/``, the OpenRLHF launcher and docs/methods.md's method table read them
from there.

Columns: ``alfworld`` (``examples/embody_agent_trainer/``) and ``webshop``
(``examples/shop_agent_trainer/Qwen3_4B/``). Envs without a study script (Sokoban, TIR Math,
Bandit) and methods without a WebShop script read the ALFWorld column (:func:`study_env`).

Readings of the study's code that shape the table (``docs/algorithms.md``, "The study's
settings"):

- GSPO's loss always aggregates ``seq-mean-token-mean`` (``verl/trainer/ppo/core_algos.py:1069``);
  its KL and entropy terms follow the actor's ``loss_agg_mode``, like every method's: token-mean
  unless the script sets it (GRPO_ST on ALFWorld, GSPO on WebShop).
- SAPO aggregates with the actor's ``loss_agg_mode`` (token-mean, ``core_algos.py:1541``); the
  WebShop SAPO script turns sequence masking on.
- GRPO_SM: ``train_alfworld_seq_mask.sh:83`` asks for a ``seq_mask`` loss mode that the code at
  that commit does not register, and sets no δ (the code's default would be 0.223). ARLArena
  runs PPO clip with the study's sequence mask at the δ = 3e-3 of its other masked scripts.
- DAPO on WebShop: the entry point forces 2 generation rounds
  (``recipe/shop_agent/main_shop_agent.py:214``, over the script's 3) and swaps in DAPO's reward
  manager, which adds the overlong penalty on each turn's response with a buffer of a fifth of
  ``max_response_length`` (``agent_system/reward_manager/dapo.py:27``; the 300 passed at
  ``main_shop_agent.py:200`` is not used).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "PAPER",
    "STUDY_ENVS",
    "STUDY_SETTINGS",
    "Setting",
    "study_env",
    "study_settings",
]

PAPER = "paper"
STUDY_ENVS: tuple[str, ...] = ("alfworld", "webshop")


@dataclass(frozen=True)
class Setting:
    """One hyperparameter value and where the study sets it (``path:line``, ``paper``, …)."""

    value: Any
    source: str


_ALF = "examples/embody_agent_trainer/"
_SHOP = "examples/shop_agent_trainer/Qwen3_4B/"
_ALF_CFG = "recipe/world_agent/config/alfworld_.yaml"
_SHOP_CFG = "recipe/shop_agent/config/webshop_.yaml"
_LOSSES = "verl/trainer/ppo/core_algos.py"
_ADVANTAGES = "recipe/world_agent/ppo/core_algos.py"

Column = dict[str, Setting]


def _at(script: str, **lines: tuple[Any, int]) -> Column:
    """``field=(value, line)`` pairs of one file as settings."""
    return {k: Setting(value, f"{script}:{line}") for k, (value, line) in lines.items()}


def _base(cfg: str, script: str, kl: int, kl_type: int) -> Column:
    """What every method of an env shares: the recipe's clip, dual clip, aggregation (of the
    loss and of the KL and entropy terms), entropy bonus and GRPO normalisation, and the
    script's k3 (``low_var_kl``) KL coefficient."""
    return {
        **_at(cfg, clip_low=(0.2, 62), clip_high=(0.2, 63), dual_clip=(3.0, 64),
              aggregation=("token-mean", 65), regularizer_aggregation=("token-mean", 65),
              entropy_coef=(0.001, 66), norm_by_std=(True, 243)),
        **_at(script, kl_coef=(0.01, kl), kl_estimator=("k3", kl_type)),
    }


def _alf(script: str, kl: int, kl_type: int, **lines: tuple[Any, int]) -> Column:
    path = _ALF + script
    return {**_base(_ALF_CFG, path, kl, kl_type), **_at(path, **lines)}


def _shop(script: str, kl: int, kl_type: int, **lines: tuple[Any, int]) -> Column:
    path = _SHOP + script
    return {**_base(_SHOP_CFG, path, kl, kl_type), **_at(path, **lines)}


def _paper(**values: Any) -> Column:
    return {k: Setting(v, PAPER) for k, v in values.items()}


_NO_DUAL = {"dual_clip": Setting(None, f"{_LOSSES}:1015")}  # GSPO's loss has no dual clip
_GSPO_AGG = {"aggregation": Setting("seq-mean-token-mean", f"{_LOSSES}:1069")}
_CISPO_NO_DUAL = {"dual_clip": Setting(None, f"{_LOSSES}:1556")}
_SAPO_NO_DUAL = {"dual_clip": Setting(None, f"{_LOSSES}:1448")}
_EMPG = _at(_ADVANTAGES, empg_k=(1.0, 550), empg_k_f=(1.0, 550), empg_zeta=(0.05, 550))
_GRPO_SM_CHOICE = {
    "sequence_mask": Setting(True, f"ARLArena: {_ALF}train_alfworld_seq_mask.sh:83 asks for an "
                             "unregistered loss_mode"),
    "delta": Setting(3e-3, f"ARLArena: as {_ALF}seq_mask/train_alfworld_cispo_seq_mask.sh:83"),
}
_SAMPO = dict(clip_low=3e-3, clip_high=4e-3, dual_clip=None, aggregation="seq-mean-token-mean",
              regularizer_aggregation="seq-mean-token-mean", gamma=0.95, omega=1.0,
              max_num_gen_batches=3, kl_coef=0.01, kl_estimator="k3", entropy_coef=0.001)
_DAPO_GIGPO = dict(clip_low=0.2, clip_high=0.28, dual_clip=3.0, aggregation="token-mean",
                   regularizer_aggregation="token-mean", gamma=0.95, omega=1.0,
                   max_num_gen_batches=3, cold_start_steps=0, kl_coef=0.01, kl_estimator="k3",
                   entropy_coef=0.001)

STUDY_SETTINGS: dict[str, dict[str, Column]] = {
    "GRPO": {
        "alfworld": _alf("train_alfworld_grpo.sh", 78, 79),
        "webshop": _shop("train_grpo.sh", 81, 82),
    },
    "GRPO_ST": {
        "alfworld": _alf("train_alfworld_grpo_seq_mean.sh", 78, 79,
                         aggregation=("seq-mean-token-mean", 80),
                         regularizer_aggregation=("seq-mean-token-mean", 80)),
    },
    "GSPO": {
        "alfworld": {**_alf("train_alfworld_gspo.sh", 79, 80, clip_low=(3e-4, 81),
                            clip_high=(4e-4, 82)), **_GSPO_AGG, **_NO_DUAL},
        "webshop": {**_shop("train_gspo.sh", 80, 79, clip_low=(3e-2, 81), clip_high=(4e-2, 82),
                            regularizer_aggregation=("seq-mean-token-mean", 83)),
                    **_GSPO_AGG, **_NO_DUAL},
    },
    "CISPO": {
        "alfworld": {**_alf("train_alfworld_cispo.sh", 79, 80, clip_low=(1.0, 81)),
                     **_CISPO_NO_DUAL},
        "webshop": {**_shop("train_cispo.sh", 80, 79, clip_low=(1.0, 81)), **_CISPO_NO_DUAL},
    },
    "SAPO": {
        "alfworld": {**_alf("train_alfworld_sapo.sh", 79, 80, tau_pos=(2.0, 81),
                            tau_neg=(2.1, 82)), **_SAPO_NO_DUAL},
        "webshop": {**_shop("train_sapo.sh", 80, 79, tau_pos=(1.0, 81), tau_neg=(1.05, 82),
                            sequence_mask=(True, 83), delta=(3e-3, 84)), **_SAPO_NO_DUAL},
    },
    "GRPO_SM": {
        "alfworld": {**_alf("train_alfworld_seq_mask.sh", 78, 79), **_GRPO_SM_CHOICE},
    },
    "CISPO_SM": {
        "alfworld": {**_alf("seq_mask/train_alfworld_cispo_seq_mask.sh", 79, 80,
                            clip_low=(1.0, 81), sequence_mask=(True, 82), delta=(3e-3, 83)),
                     **_CISPO_NO_DUAL},
    },
    "SAPO_SM": {
        "alfworld": {**_alf("seq_mask/train_alfworld_sapo_seq_mask.sh", 79, 80,
                            tau_pos=(1.0, 81), tau_neg=(1.05, 82), sequence_mask=(True, 83),
                            delta=(3e-3, 84)), **_SAPO_NO_DUAL},
    },
    "GiGPO": {
        "alfworld": _alf("train_alfworld_gigpo.sh", 78, 79, gamma=(0.95, 100), omega=(1.0, 101),
                         gigpo_mode=("mean_std_norm", 21)),
        "webshop": _shop("train_gigpo.sh", 79, 80, gamma=(0.95, 99), omega=(1.0, 100),
                         gigpo_mode=("mean_norm", 29)),
    },
    "EMPG": {
        "alfworld": {**_alf("train_alfworld_empg.sh", 79, 80), **_EMPG},
        "webshop": {**_shop("train_empg.sh", 79, 80), **_EMPG},
    },
    "DAPO_GRPO": {
        "alfworld": _alf("train_alfworld_dapo.sh", 79, 80, max_num_gen_batches=(3, 105),
                         cold_start_steps=(15, 106)),
        "webshop": {
            **_shop("train_dapo.sh", 80, 79, overlong_max_len=(512, 38)),
            **_at("recipe/shop_agent/main_shop_agent.py", max_num_gen_batches=(2, 214)),
            **_at(_SHOP_CFG, cold_start_steps=(0, 263)),
        },
    },
    "DAPO_GiGPO": {
        "alfworld": _paper(**_DAPO_GIGPO, gigpo_mode="mean_std_norm"),
        "webshop": _paper(**_DAPO_GIGPO, gigpo_mode="mean_norm"),
    },
    "SAMPO": {
        "alfworld": _paper(**_SAMPO, gigpo_mode="mean_std_norm", cold_start_steps=15),
        "webshop": _paper(**_SAMPO, gigpo_mode="mean_norm", cold_start_steps=5),
    },
}

# ARLArena env names (EnvFactory's, gymnasium ids) -> the study's column.
_ENV_COLUMNS = {
    "alfworld": "alfworld",
    "arlarena/alfworld-v0": "alfworld",
    "webshop": "webshop",
    "webshop-small": "webshop",
    "arlarena/webshop-v0": "webshop",
    "arlarena/webshop-small-v0": "webshop",
}


def study_env(env: str | None) -> str:
    """The column of :data:`STUDY_SETTINGS` an ARLArena env reads: ``webshop`` for WebShop and
    WebShop-Small, ``alfworld`` for everything else (ALFWorld, and the envs the study has no
    script for).

    >>> study_env("ARLArena/WebShop-Small-v0"), study_env("sokoban"), study_env(None)
    ('webshop', 'alfworld', 'alfworld')
    """
    return _ENV_COLUMNS.get((env or "").lower(), "alfworld")


def study_settings(method: str, env: str | None = None) -> Column:
    """The study's settings of ``method`` on ``env`` (a column name or an ARLArena env): the
    env's column, or the ALFWorld one where the study has no script for that env."""
    columns = STUDY_SETTINGS[method]
    return columns.get(study_env(env), columns["alfworld"])
