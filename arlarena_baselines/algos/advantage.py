"""Advantage estimators: one value per step sample, broadcast over its tokens by the loss.

Holds the estimators :func:`grpo_advantage`, :func:`gigpo_advantage`, :func:`empg_advantage`,
the step-return helper :func:`discounted_returns`, and the registry
:data:`ADVANTAGE_ESTIMATORS` (``grpo``, ``gigpo``, ``empg``) whose entries all take
``(inputs: AdvantageInputs, params) -> (N,)``; see :func:`register_advantage`.
Formulas: ``docs/algorithms.md`` §3.

Group, trajectory and anchor ids may be a 1-D int tensor, a numpy array or a list of
hashable values (str / int); see :mod:`~arlarena_baselines.algos.grouping`. Statistics are
computed in float64; results come back as float32 (or the dtype of a floating ``scores``
tensor).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Protocol

import numpy as np
from torch import Tensor

from .grouping import (
    Ids,
    Values,
    as_values,
    group_index,
    next_turn,
    normalize_in_groups,
    to_output,
    trajectory_order,
)
from .registry import Registry

__all__ = [
    "ADVANTAGE_ESTIMATORS",
    "GIGPO_MODES",
    "AdvantageFn",
    "AdvantageInputs",
    "AdvantageParams",
    "discounted_returns",
    "empg_advantage",
    "get_advantage",
    "gigpo_advantage",
    "grpo_advantage",
    "register_advantage",
]

GIGPO_MODES: tuple[str, ...] = ("mean_std_norm", "mean_norm")


def _grpo(
    values: np.ndarray,
    codes: np.ndarray,
    num: int,
    traj: np.ndarray | None,
    norm_by_std: bool,
    eps: float,
) -> np.ndarray:
    """GRPO on group codes; with trajectory codes ``traj``, each trajectory counts once."""
    if traj is None:
        return normalize_in_groups(values, codes, num, norm_by_std=norm_by_std, eps=eps)
    _, first = np.unique(traj, return_index=True)  # codes run 0..T-1: first[t] is in t
    per_traj = normalize_in_groups(
        values[first], codes[first], num, norm_by_std=norm_by_std, eps=eps
    )
    return per_traj[traj]


def _codes(ids: Ids | None) -> np.ndarray | None:
    return None if ids is None else group_index(ids)[0]


def grpo_advantage(
    scores: Values,
    group_ids: Ids,
    *,
    norm_by_std: bool = True,
    eps: float = 1e-6,
    traj_ids: Ids | None = None,
) -> Tensor:
    """GRPO (Shao et al. 2024, DeepSeekMath): A_i = (R_i − mean_g R) / (std_g R + eps).

    The mean and (unbiased) std are taken over the step samples of the group, so each
    trajectory weighs by its number of turns (as the agent codebases do); pass ``traj_ids``
    to count each trajectory once instead. A group of one gets 0.

    Args:
        scores: (N,) episode return of each step sample's trajectory.
        group_ids: (N,) group (task) id of each sample.
        norm_by_std: divide by std + eps (``False``: Dr. GRPO-style centring only).
        traj_ids: optional (N,) trajectory ids for per-trajectory statistics.

    Returns:
        (N,) advantages.

    >>> grpo_advantage([1.0, 0.0, 5.0], ["a", "a", "b"])
    tensor([ 0.7071, -0.7071,  0.0000])
    """
    codes, num = group_index(group_ids)
    adv = _grpo(as_values(scores), codes, num, _codes(traj_ids), norm_by_std, eps)
    return to_output(adv, scores)


def _discounted(
    rewards: np.ndarray, traj: np.ndarray, steps: np.ndarray, gamma: float
) -> np.ndarray:
    """Discounted returns on trajectory codes: one vectorised pass per turn depth."""
    order = trajectory_order(traj, steps)
    returns = rewards[order]  # a copy
    if returns.size == 0:
        return returns
    sorted_traj = traj[order]
    has_next = np.append(sorted_traj[1:] == sorted_traj[:-1], False)
    # Turns left after each sample in its trajectory: 0 for the last turn.
    ends = np.flatnonzero(~has_next)
    position = np.arange(returns.size)
    from_end = ends[np.searchsorted(ends, position)] - position
    for depth in range(1, int(from_end.max()) + 1):
        sel = np.flatnonzero(from_end == depth)
        returns[sel] += gamma * returns[sel + 1]
    out = np.empty_like(returns)
    out[order] = returns
    return out


def discounted_returns(rewards: Values, traj_ids: Ids, steps: Values, gamma: float) -> Tensor:
    """Discounted step returns R_t = Σ_{k≥t} γ^{k−t} r_k within each trajectory.

    Samples may come in any order; ``steps`` orders the samples of a trajectory, and
    consecutive samples are one discount apart.

    Args:
        rewards: (N,) per-step reward (including any format / invalid-action penalty).
        traj_ids: (N,) trajectory id of each sample.
        steps: (N,) turn index of each sample.
        gamma: discount γ (0.95 in the study).

    Returns:
        (N,) returns, aligned with the inputs.

    >>> discounted_returns([1.0, 0.0, 2.0], ["a", "a", "b"], [1, 0, 0], 0.5)
    tensor([1.0000, 0.5000, 2.0000])
    """
    returns = _discounted(as_values(rewards), group_index(traj_ids)[0], as_values(steps), gamma)
    return to_output(returns, rewards)


def _gigpo(
    episode_scores: np.ndarray,
    step_returns: np.ndarray,
    group_ids: Ids,
    anchors: Sequence[str] | Ids,
    traj: np.ndarray | None,
    omega: float,
    mode: str,
    eps: float,
) -> np.ndarray:
    if mode not in GIGPO_MODES:
        raise ValueError(f"unknown GiGPO mode {mode!r}; known: {', '.join(GIGPO_MODES)}")
    norm_by_std = mode == "mean_std_norm"
    codes, num = group_index(group_ids)
    episode = _grpo(episode_scores, codes, num, traj, norm_by_std, eps)
    anchor_codes, num_anchors = group_index(anchors)
    pairs, num_pairs = group_index(codes * max(num_anchors, 1) + anchor_codes)
    step = normalize_in_groups(step_returns, pairs, num_pairs, norm_by_std=norm_by_std, eps=eps)
    return episode + omega * step


def gigpo_advantage(
    episode_scores: Values,
    step_returns: Values,
    group_ids: Ids,
    anchors: Sequence[str] | Ids,
    *,
    omega: float = 1.0,
    mode: str = "mean_std_norm",
    eps: float = 1e-6,
    traj_ids: Ids | None = None,
) -> Tensor:
    """GiGPO (Feng et al. 2025, arXiv 2505.10978): episode- plus anchor-state-level advantage.

    A = A^E + ω A^S. A^E normalises episode returns within the group (as
    :func:`grpo_advantage`, ``traj_ids`` likewise); A^S normalises the discounted step
    returns within the step samples of the same group whose anchor state (raw observation
    before the action) is identical. ``mode`` picks F = std + eps (``mean_std_norm``) or
    F = 1 (``mean_norm``) for both levels. A singleton anchor group has A^S = 0.

    Args:
        episode_scores: (N,) episode return of each sample's trajectory.
        step_returns: (N,) discounted step returns (see :func:`discounted_returns`).
        group_ids: (N,) group ids.
        anchors: (N,) anchor observations (strings, or any hashable ids).

    Returns:
        (N,) advantages.

    >>> gigpo_advantage([1.0, 1.0, 0.0], [1.0, 0.5, 0.0], ["g"] * 3, ["s", "t", "s"],
    ...                 mode="mean_norm")
    tensor([ 0.8333,  0.3333, -1.1667])
    """
    adv = _gigpo(
        as_values(episode_scores),
        as_values(step_returns),
        group_ids,
        anchors,
        _codes(traj_ids),
        omega,
        mode,
        eps,
    )
    return to_output(adv, episode_scores)


def _empg(
    adv: np.ndarray, ent: np.ndarray, nxt: np.ndarray, k: float, k_f: float, zeta: float
) -> np.ndarray:
    if adv.size == 0:
        return adv
    low, span = ent.min(), ent.max() - ent.min()
    # A spread below the smallest normal float has no finite reciprocal: treat it as none.
    scale = 1.0 / span if span >= np.finfo(ent.dtype).tiny else 0.0
    weight = np.exp(-k * (ent - low) * scale)
    gate = weight / weight.mean()
    has_next = ~np.isnan(nxt)
    next_norm = np.clip((np.where(has_next, nxt, low) - low) * scale, 0.0, 1.0)
    bonus = np.where(has_next, np.exp(-k_f * next_norm), 0.0)
    modulated = gate * adv + zeta * bonus
    return modulated - modulated.mean()


def empg_advantage(
    base_advantages: Values,
    entropies: Values,
    next_entropies: Values,
    *,
    k: float = 1.0,
    k_f: float = 1.0,
    zeta: float = 0.05,
) -> Tensor:
    """EMPG (Wang et al. 2025, entropy-modulated policy gradients) on top of a base advantage.

    H̃ = min–max normalised turn entropy over the batch; g = exp(−k H̃) / mean exp(−k H̃);
    f = exp(−k_f H̃_next) (next turn of the same trajectory, normalised with the same
    min / max and clipped to [0, 1]; 0 where ``next_entropies`` is NaN, i.e. the last turn).
    A_mod = g · A + ζ f, then the batch mean is subtracted.

    Args:
        base_advantages: (N,) e.g. GRPO advantages.
        entropies: (N,) mean token entropy of each sample's response.
        next_entropies: (N,) the same for the next turn, NaN for a trajectory's last turn
            (see :func:`~arlarena_baselines.algos.grouping.next_turn_values`).

    Returns:
        (N,) advantages.

    >>> empg_advantage([1.0, 1.0], [0.0, 2.0], [2.0, float("nan")])
    tensor([ 0.4713, -0.4713])
    """
    adv = _empg(
        as_values(base_advantages), as_values(entropies), as_values(next_entropies), k, k_f, zeta
    )
    return to_output(adv, base_advantages)


@dataclass(frozen=True)
class AdvantageInputs:
    """The per-step-sample columns an advantage estimator may read (each (N,)).

    ``episode_scores`` and ``group_ids`` are always needed; ``traj_ids``, ``steps``,
    ``step_rewards``, ``anchors`` and ``entropies`` only by the estimators that use them
    (:meth:`require` names the missing ones).
    """

    episode_scores: Values
    group_ids: Ids
    traj_ids: Ids | None = None
    steps: Tensor | Sequence[int] | None = None
    step_rewards: Values | None = None
    anchors: Sequence[str] | Ids | None = None
    entropies: Values | None = None

    def require(self, estimator: str, *names: str) -> None:
        """Raise a ``ValueError`` naming the fields ``estimator`` needs but did not get."""
        missing = [n for n in names if getattr(self, n) is None]
        if missing:
            known = ", ".join(f.name for f in fields(self))
            raise ValueError(
                f"advantage estimator {estimator!r} needs {', '.join(missing)} (fields: {known})"
            )


class AdvantageParams(Protocol):
    """The hyperparameters the built-in estimators read (a :class:`~.methods.Method` has them)."""

    norm_by_std: bool
    per_trajectory_stats: bool
    adv_eps: float
    gamma: float
    omega: float
    gigpo_mode: str
    empg_k: float
    empg_k_f: float
    empg_zeta: float


AdvantageFn = Callable[[AdvantageInputs, AdvantageParams], Tensor]

ADVANTAGE_ESTIMATORS: Registry[AdvantageFn] = Registry("advantage estimator")


def register_advantage(
    name: str, *, override: bool = False
) -> Callable[[AdvantageFn], AdvantageFn]:
    """Decorator registering ``fn(inputs: AdvantageInputs, params) -> (N,)`` as ``name``."""
    return ADVANTAGE_ESTIMATORS.register(name, override=override)


def get_advantage(name: str) -> AdvantageFn:
    """The advantage estimator registered as ``name``; an unknown name lists the known ones."""
    return ADVANTAGE_ESTIMATORS[name]


def _grpo_from(inputs: AdvantageInputs, params: AdvantageParams) -> np.ndarray:
    traj = None
    if params.per_trajectory_stats:
        inputs.require("grpo", "traj_ids")
        traj = group_index(inputs.traj_ids)[0]
    codes, num = group_index(inputs.group_ids)
    values = as_values(inputs.episode_scores)
    return _grpo(values, codes, num, traj, params.norm_by_std, params.adv_eps)


@register_advantage("grpo")
def grpo_estimator(inputs: AdvantageInputs, params: AdvantageParams) -> Tensor:
    """GRPO advantages; reads ``norm_by_std``, ``per_trajectory_stats``, ``adv_eps``."""
    return to_output(_grpo_from(inputs, params), inputs.episode_scores)


@register_advantage("gigpo")
def gigpo_estimator(inputs: AdvantageInputs, params: AdvantageParams) -> Tensor:
    """GiGPO advantages from step rewards; reads ``gamma``, ``omega``, ``gigpo_mode``."""
    inputs.require("gigpo", "traj_ids", "steps", "step_rewards", "anchors")
    traj = group_index(inputs.traj_ids)[0]
    returns = _discounted(
        as_values(inputs.step_rewards), traj, as_values(inputs.steps), params.gamma
    )
    adv = _gigpo(
        as_values(inputs.episode_scores),
        returns,
        inputs.group_ids,
        inputs.anchors,
        traj if params.per_trajectory_stats else None,
        params.omega,
        params.gigpo_mode,
        params.adv_eps,
    )
    return to_output(adv, inputs.episode_scores)


@register_advantage("empg")
def empg_estimator(inputs: AdvantageInputs, params: AdvantageParams) -> Tensor:
    """EMPG on GRPO advantages; reads ``empg_k``, ``empg_k_f``, ``empg_zeta``."""
    inputs.require("empg", "traj_ids", "steps", "entropies")
    entropies = as_values(inputs.entropies)
    traj = group_index(inputs.traj_ids)[0]
    nxt = next_turn(entropies, traj, as_values(inputs.steps))
    adv = _empg(
        _grpo_from(inputs, params), entropies, nxt, params.empg_k, params.empg_k_f, params.empg_zeta
    )
    return to_output(adv, inputs.episode_scores)
