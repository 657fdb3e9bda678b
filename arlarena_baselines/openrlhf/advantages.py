"""A method's advantages for OpenRLHF's experiences: one value per turn, spread on its tokens.

OpenRLHF keeps one sample per episode: its ``action_mask`` has one run of ones per turn (the
env feedback between turns is masked out). :func:`method_advantages` turns the batch into the
step samples ARLArena's trainer works on (one per turn: episode return, group, trajectory,
turn index, turn reward, anchor, entropy, response length), computes the method's advantages with
:func:`~arlarena_baselines.algos.compute_advantages`, and writes each turn's value on the
tokens of its run. Groups follow OpenRLHF's own layout (``n_samples_per_prompt`` consecutive
samples per prompt, ``Experience.index`` their position). The per-turn rewards and anchors
come from the agent's ``extra_logs`` (:mod:`.turn_logs`) and are removed from ``info``. EMPG's
turn entropy is estimated by the mean surprisal −log πold of the sampled tokens, since
OpenRLHF's experience maker computes log-probs, not entropies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from arlarena_baselines.algos import Method, compute_advantages
from arlarena_baselines.openrlhf import turn_logs

__all__ = ["method_advantages", "turn_spans"]


def turn_spans(mask_row: Tensor) -> list[tuple[int, int]]:
    """``[start, end)`` of each run of ones in a 1-D 0/1 mask, in order.

    >>> turn_spans(torch.tensor([0, 1, 1, 0, 0, 1, 0, 1]))
    [(1, 3), (5, 6), (7, 8)]
    """
    m = mask_row.to(torch.int8)
    zero = m.new_zeros(1)
    edges = torch.diff(m, prepend=zero, append=zero)
    starts = (edges == 1).nonzero().flatten().tolist()
    ends = (edges == -1).nonzero().flatten().tolist()
    return list(zip(starts, ends, strict=True))


def method_advantages(
    experiences: Sequence[Any], method: Method, n_samples_per_prompt: int
) -> None:
    """Fill ``advantages`` and ``returns`` of OpenRLHF ``Experience`` batches in place.

    Each experience needs ``index``, ``action_mask``, ``action_log_probs``, ``rewards`` (the
    episode returns) and the :mod:`.turn_logs` columns in ``info``. ``returns`` get the
    advantages too (as OpenRLHF's critic-free estimators do), ``info["return"]`` the episode
    return, and ``kl`` is dropped (the method's KL is a loss term).
    """
    columns: dict[str, list[Any]] = {
        k: [] for k in ("episode_scores", "group_ids", "traj_ids", "steps", "step_rewards",
                        "anchors", "entropies", "response_lengths")
    }
    spans: list[tuple[Any, int, int, int]] = []
    for exp in experiences:
        rewards, anchors = (exp.info.pop(key) for key in turn_logs.PER_TURN)
        for row, sample in enumerate(exp.index):
            runs = turn_spans(exp.action_mask[row])
            turns = int(exp.info[turn_logs.TURNS][row])
            if len(runs) != turns:
                raise ValueError(
                    f"sample {sample}: {len(runs)} response spans in the action mask but the "
                    f"agent logged {turns} turns"
                )
            for step, (start, end) in enumerate(runs):
                surprisal = -exp.action_log_probs[row, start:end].float().mean()
                for key, value in zip(columns, (
                    float(exp.rewards[row]), sample // n_samples_per_prompt, sample, step,
                    float(rewards[row, step]), int(anchors[row, step]), float(surprisal),
                    end - start,
                ), strict=True):
                    columns[key].append(value)
                spans.append((exp, row, start, end))
    values = compute_advantages(method, **columns).tolist()
    for exp in experiences:
        exp.advantages = torch.zeros_like(exp.action_log_probs, dtype=torch.float32)
    for value, (exp, row, start, end) in zip(values, spans, strict=True):
        exp.advantages[row, start:end] = value
    for exp in experiences:
        exp.returns = exp.advantages.clone()
        exp.info["return"] = exp.rewards.float()
        exp.kl = None
