"""DAPO dynamic filtering, resampling bookkeeping and overlong shaping."""

import pytest
import torch

from arlarena_baselines.algos import (
    DynamicSampler,
    compute_advantages,
    dynamic_filter,
    get_method,
    make_sampler,
    overlong_penalty,
    study_method,
)
from arlarena_baselines.algos import metric_names as mn


def test_dynamic_filter_drops_all_equal_and_singleton_groups():
    keep = dynamic_filter(["a", "a", "b", "b", "c", "d", "d"], [1, 0, 1, 1, 1, 0.5, 0.5])
    assert keep.tolist() == [True, True, False, False, False, False, False]
    assert dynamic_filter(torch.tensor([3, 3]), torch.tensor([0.0, 1.0])).tolist() == [True, True]


def test_sampler_caps_at_target_in_order_of_appearance():
    sampler = DynamicSampler(target_groups=2, max_rounds=3)
    keep = sampler.add(["z", "z", "y", "y", "x", "x"], [1, 0, 0, 1, 0, 1])
    assert keep.tolist() == [True, True, True, True, False, False]
    assert sampler.done and sampler.kept_groups == 2 and sampler.needed == 0


def test_sampler_without_top_up_stops_after_max_rounds_with_what_it_has():
    sampler = DynamicSampler(target_groups=3, max_rounds=2, top_up=False)
    sampler.add(["a", "a"], [1, 1])
    assert not sampler.done
    sampler.add(["b", "b", "c", "c"], [0, 1, 1, 1])
    assert sampler.done and sampler.kept_groups == 1 and sampler.rounds == 2
    assert sampler.metrics() == {mn.GROUPS_FILTERED: 2.0, mn.GROUPS_TOPPED_UP: 0.0}


# A hand-made step of DAPO at the study's settings (4 groups of 2 wanted, 3 rounds). The
# study's `filter_group_data` (agent_system/multi_turn_rollout/utils.py:137) keeps the groups
# whose returns differ in the first rounds; in the last round (last_try) it takes that
# round's differing groups first, then its all-equal groups in order, until the batch holds
# train_batch_size groups: here g1, g4 (round 1), g8, then g7 and g9 would be next, and it
# stops at 4 with g7. Without the top-up the step would train on 3 groups.
ROUNDS = [
    (["g1", "g1", "g2", "g2", "g3", "g3", "g4", "g4"], [1, 0, 1, 1, 0, 0, 0.5, 1]),
    (["g5", "g5", "g6", "g6"], [1, 1, 0, 0]),
    (["g7", "g7", "g8", "g8", "g9", "g9"], [0, 0, 0, 1, 1, 1]),
]


@pytest.mark.parametrize(("top_up", "kept"), [
    (True, ["g1", "g1", "g4", "g4", "g7", "g7", "g8", "g8"]),
    (False, ["g1", "g1", "g4", "g4", "g8", "g8"]),
])
def test_sampler_tops_the_last_round_up_as_the_study(top_up, kept):
    sampler = DynamicSampler(target_groups=4, max_rounds=3, top_up=top_up)
    batch = []
    for groups, returns in ROUNDS:
        assert not sampler.done
        keep = sampler.add(groups, returns)
        batch += [g for g, k in zip(groups, keep.tolist(), strict=True) if k]
    assert sampler.done and sampler.rounds == 3
    assert batch == kept
    assert sampler.kept_groups == len(kept) // 2
    assert sampler.metrics() == {mn.GROUPS_FILTERED: 6.0 - top_up,
                                 mn.GROUPS_TOPPED_UP: float(top_up)}


def test_a_single_round_is_the_last_one_and_is_topped_up():
    sampler = DynamicSampler(target_groups=2, max_rounds=1)
    assert sampler.add(["a", "a", "b", "b", "c", "c"], [1, 1, 0, 1, 0, 0]).tolist() == [
        True, True, True, True, False, False]
    assert sampler.kept_groups == 2 and sampler.topped_up_groups == 1


def test_sampler_without_filter_keeps_everything():
    sampler = DynamicSampler(target_groups=5, max_rounds=1, filter_fn=None)
    assert sampler.add([0, 0, 1], [1, 1, 1]).all()
    assert sampler.done and sampler.dropped_groups == 0
    with pytest.raises(ValueError):
        DynamicSampler(target_groups=0)


def test_make_sampler_follows_method_and_cold_start():
    plain = make_sampler(get_method("GRPO"), 4)
    assert plain.filter_fn is None and plain.max_rounds == 1
    for name in ("DAPO_GRPO", "SAMPO"):  # cold start: 15 steps on ALFWorld
        assert make_sampler(name, 4, step=14).filter_fn is None
        dapo = make_sampler(name, 4, step=15)
        assert dapo.filter_fn is dynamic_filter and dapo.max_rounds == 3 and dapo.top_up
    webshop = make_sampler(study_method("DAPO_GRPO", "webshop"), 4, step=0)
    assert webshop.filter_fn is dynamic_filter and webshop.max_rounds == 2
    off = get_method("DAPO_GRPO").with_overrides(top_up=False)
    assert not make_sampler(off, 4, step=15).top_up


def test_overlong_penalty_joins_the_scores_of_a_method_that_asks():
    # The study's WebShop DAPO: L_max 512, buffer int(512 / 5) = 102, so from 410 tokens on.
    method = study_method("DAPO_GRPO", "webshop")
    columns = {"episode_scores": [1.0, 1.0, 0.0, 0.0], "group_ids": ["a"] * 4}
    short = compute_advantages(method, **columns, response_lengths=[100, 100, 100, 100])
    long = compute_advantages(method, **columns, response_lengths=[100, 512, 100, 461])
    assert short.tolist() == compute_advantages("DAPO_GRPO", **columns).tolist()
    scores = torch.tensor([1.0, 0.9, 0.0, -0.05], dtype=torch.float64)  # 461: (461-410)/102·0.1
    expected = (scores - scores.mean()) / (scores.std() + 1e-6)
    assert torch.allclose(long.double(), expected, atol=1e-6)
    with pytest.raises(ValueError, match="response_lengths"):
        compute_advantages(method, **columns)


def test_overlong_penalty_by_hand():
    # L_max = 100, L_buf = 20: no penalty up to 80, linear to −0.1 at 100, floored beyond
    penalty = overlong_penalty([50, 80, 90, 100, 130], 100)
    assert torch.allclose(penalty, torch.tensor([0.0, 0.0, -0.05, -0.1, -0.1]))
    assert overlong_penalty([95], 100, buffer_len=10, factor=1.0).item() == pytest.approx(-0.5)
