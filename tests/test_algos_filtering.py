"""DAPO dynamic filtering, resampling bookkeeping and overlong shaping."""

import pytest
import torch

from arlarena_baselines.algos import (
    DynamicSampler,
    dynamic_filter,
    get_method,
    make_sampler,
    overlong_penalty,
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


def test_sampler_stops_after_max_rounds_with_what_it_has():
    sampler = DynamicSampler(target_groups=3, max_rounds=2)
    sampler.add(["a", "a"], [1, 1])
    assert not sampler.done
    sampler.add(["b", "b", "c", "c"], [0, 1, 1, 1])
    assert sampler.done and sampler.kept_groups == 1 and sampler.rounds == 2
    assert sampler.metrics() == {mn.GROUPS_FILTERED: 2.0}


def test_sampler_without_filter_keeps_everything():
    sampler = DynamicSampler(target_groups=5, max_rounds=1, filter_fn=None)
    assert sampler.add([0, 0, 1], [1, 1, 1]).all()
    assert sampler.done and sampler.dropped_groups == 0
    with pytest.raises(ValueError):
        DynamicSampler(target_groups=0)


def test_make_sampler_follows_method_and_cold_start():
    plain = make_sampler(get_method("GRPO"), 4)
    assert plain.filter_fn is None and plain.max_rounds == 1
    dapo = make_sampler("DAPO_GRPO", 4, step=0)
    assert dapo.filter_fn is dynamic_filter and dapo.max_rounds == 3
    assert make_sampler("SAMPO", 4, step=14).filter_fn is None  # cold start: 15 steps
    assert make_sampler("SAMPO", 4, step=15).filter_fn is dynamic_filter


def test_overlong_penalty_by_hand():
    # L_max = 100, L_buf = 20: no penalty up to 80, linear to −0.1 at 100, floored beyond
    penalty = overlong_penalty([50, 80, 90, 100, 130], 100)
    assert torch.allclose(penalty, torch.tensor([0.0, 0.0, -0.05, -0.1, -0.1]))
    assert overlong_penalty([95], 100, buffer_len=10, factor=1.0).item() == pytest.approx(-0.5)
