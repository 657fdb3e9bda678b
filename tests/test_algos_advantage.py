"""Advantage estimators and group bookkeeping: hand-computed values."""

import math

import numpy as np
import pytest
import torch

from arlarena_baselines.algos import (
    discounted_returns,
    empg_advantage,
    get_advantage,
    gigpo_advantage,
    group_index,
    grpo_advantage,
    next_turn_values,
)

SQRT3 = math.sqrt(3.0)


def test_grpo_uses_unbiased_group_std():
    adv = grpo_advantage([1.0, 0.0, 1.0, 0.0], ["g"] * 4)
    # mean 0.5, unbiased std sqrt(1/3): ±0.5 · sqrt(3)
    assert torch.allclose(adv, torch.tensor([1, -1, 1, -1]) * 0.5 * SQRT3, atol=1e-5)
    assert adv.dtype == torch.float32


def test_grpo_all_equal_and_singleton_groups_get_zero():
    adv = grpo_advantage([1.0, 1.0, 1.0, 3.0, 0.0, 2.0], ["a", "a", "a", "b", "c", "c"])
    assert torch.allclose(adv[:4], torch.zeros(4))
    assert torch.allclose(adv[4:], torch.tensor([-1.0, 1.0]) / math.sqrt(2), atol=1e-5)


def test_grpo_accepts_tensor_list_and_numpy_ids_alike():
    scores = torch.tensor([3.0, 1.0, 2.0, 2.0, 0.0])
    ids = [
        torch.tensor([5, 5, 9, 9, 9]),
        [5, 5, 9, 9, 9],
        ["x", "x", "y", "y", "y"],
        np.array([5, 5, 9, 9, 9]),
        np.array(["x", "x", "y", "y", "y"]),
    ]
    results = [grpo_advantage(scores, g) for g in ids]
    for other in results[1:]:
        assert torch.equal(results[0], other)


def test_grpo_without_std_only_centres():
    adv = grpo_advantage([1.0, 0.0, 0.0, 0.0], ["g"] * 4, norm_by_std=False)
    assert torch.allclose(adv, torch.tensor([0.75, -0.25, -0.25, -0.25]))


def test_grpo_per_trajectory_statistics_count_each_trajectory_once():
    scores, groups, trajs = [1.0, 1.0, 1.0, 0.0], ["g"] * 4, ["t1", "t1", "t1", "t2"]
    # step-weighted: values [1, 1, 1, 0]: mean 0.75, std sqrt(0.75 / 3) = 0.5
    step = grpo_advantage(scores, groups)
    assert torch.allclose(step, torch.tensor([0.5, 0.5, 0.5, -1.5]), atol=1e-5)
    # per trajectory: values [1, 0]: mean 0.5, std sqrt(0.5)
    per_traj = grpo_advantage(scores, groups, traj_ids=trajs)
    expected = torch.tensor([1.0, 1.0, 1.0, -1.0]) * 0.5 / math.sqrt(0.5)
    assert torch.allclose(per_traj, expected, atol=1e-5)


def test_grpo_keeps_float_dtype_of_tensor_scores():
    adv = grpo_advantage(torch.tensor([1.0, 0.0], dtype=torch.float64), [0, 0])
    assert adv.dtype == torch.float64


def test_discounted_returns_in_any_order():
    # trajectory a: steps 0, 1, 2 with rewards 1, 0, 2; trajectory b: one step, reward 3
    # γ = 0.5: R_a = [1 + 0.5 (0 + 0.5 · 2), 0 + 0.5 · 2, 2] = [1.5, 1, 2]
    rewards = [2.0, 3.0, 1.0, 0.0]
    returns = discounted_returns(rewards, ["a", "b", "a", "a"], [2, 0, 0, 1], 0.5)
    assert torch.allclose(returns, torch.tensor([2.0, 3.0, 1.5, 1.0]))


def test_discounted_returns_long_trajectory_matches_closed_form():
    steps = np.arange(60)
    returns = discounted_returns(np.ones(60), np.zeros(60, dtype=int), steps[::-1], 0.95)
    # reversed steps: sample i is step 59 − i, so R = Σ_{k<i+1} 0.95^k
    expected = (1 - 0.95 ** (np.arange(60) + 1)) / 0.05
    assert torch.allclose(returns, torch.tensor(expected, dtype=torch.float32))


# Group g: t1 (score 1) visits s0 then s1 with rewards 0, 1; t2 (score 0) visits s0, s2.
# Group h: one trajectory also visiting s0 (same text, other group: not merged).
EPISODE = [1.0, 1.0, 0.0, 0.0, 0.5]
GROUPS = ["g", "g", "g", "g", "h"]
ANCHORS = ["s0", "s1", "s0", "s2", "s0"]
TRAJ = ["t1", "t1", "t2", "t2", "t3"]
STEPS = [0, 1, 0, 1, 0]
REWARDS = [0.0, 1.0, 0.0, 0.0, 0.5]


def test_gigpo_mean_std_norm_by_hand():
    returns = discounted_returns(REWARDS, TRAJ, STEPS, 0.5)  # t1: [0.5, 1], t2: [0, 0]
    assert torch.allclose(returns, torch.tensor([0.5, 1.0, 0.0, 0.0, 0.5]))
    adv = gigpo_advantage(EPISODE, returns, GROUPS, ANCHORS)
    episode = 0.5 * SQRT3  # (1 − 0.5) / sqrt(1/3)
    step = 0.25 / math.sqrt(0.125)  # anchor (g, s0): returns [0.5, 0]: mean 0.25, std 0.3536
    expected = [episode + step, episode, -episode - step, -episode, 0.0]
    assert torch.allclose(adv, torch.tensor(expected), atol=1e-5)


def test_gigpo_mean_norm_and_omega():
    returns = discounted_returns(REWARDS, TRAJ, STEPS, 0.5)
    adv = gigpo_advantage(EPISODE, returns, GROUPS, ANCHORS, mode="mean_norm")
    assert torch.allclose(adv, torch.tensor([0.75, 0.5, -0.75, -0.5, 0.0]))
    no_step = gigpo_advantage(EPISODE, returns, GROUPS, ANCHORS, omega=0.0)
    assert torch.allclose(no_step, grpo_advantage(EPISODE, GROUPS))
    with pytest.raises(ValueError, match="mean_std_norm"):
        gigpo_advantage(EPISODE, returns, GROUPS, ANCHORS, mode="std")


def test_gigpo_singleton_anchor_groups_get_episode_part_only():
    returns = [3.0, -1.0, 2.0]
    adv = gigpo_advantage([1.0, 0.0, 1.0], returns, ["g"] * 3, ["a", "b", "c"])
    assert torch.allclose(adv, grpo_advantage([1.0, 0.0, 1.0], ["g"] * 3))


def test_empg_by_hand():
    adv = empg_advantage([1.0, -1.0, 0.5], [0.0, 1.0, 2.0], [1.0, 2.0, float("nan")])
    # H̃ = [0, .5, 1]; g = e^{−H̃} / mean; f(next) = e^{−H̃next}, 0 for the last turn
    expected = torch.tensor([1.2410812, -1.2118802, -0.0292010])
    assert torch.allclose(adv, expected, atol=1e-6)


def test_empg_constant_entropy_reduces_to_bonus_shift():
    adv = empg_advantage([1.0, -1.0, 0.0], [0.7] * 3, [0.7, 0.7, float("nan")], zeta=0.3)
    raw = torch.tensor([1.3, -0.7, 0.0])
    assert torch.allclose(adv, raw - raw.mean())


def test_next_turn_values_follow_step_order():
    nxt = next_turn_values([10.0, 11.0, 12.0, 20.0], ["a", "a", "a", "b"], [2, 0, 1, 0])
    assert torch.allclose(nxt, torch.tensor([math.nan, 12.0, 10.0, math.nan]), equal_nan=True)


def test_group_index_numbers_by_first_appearance():
    codes, num = group_index(torch.tensor([7, 3, 7, 1]))
    assert num == 3 and codes.tolist() == [0, 1, 0, 2]
    codes, num = group_index([("a", 1), ("b", 0), ("a", 1)])
    assert num == 2 and codes.tolist() == [0, 1, 0]


def test_registered_estimators_name_missing_fields():
    from arlarena_baselines.algos import AdvantageInputs, get_method

    inputs = AdvantageInputs(episode_scores=[1.0, 0.0], group_ids=[0, 0])
    with pytest.raises(ValueError, match="step_rewards, anchors"):
        get_advantage("gigpo")(inputs, get_method("GiGPO"))
    with pytest.raises(KeyError, match="grpo, gigpo, empg"):
        get_advantage("ppo")
