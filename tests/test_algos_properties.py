"""Property tests (hypothesis) for the algorithm zoo."""

import math

import numpy as np
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from arlarena_baselines.algos import (
    AGG_MODES,
    PolicyLossConfig,
    aggregate_loss,
    discounted_returns,
    empg_advantage,
    get_policy_loss,
    gigpo_advantage,
    grpo_advantage,
)

FAST = settings(max_examples=25, deadline=None, database=None)

CONFIGS = [
    PolicyLossConfig(),
    PolicyLossConfig(clip_low=0.2, clip_high=0.28, dual_clip=3.0),
    PolicyLossConfig(clip_low=1.0, clip_high=0.2),
    PolicyLossConfig(clip_low=3e-3, clip_high=4e-3),
]


def _tensors(seed: int, batch: int, tokens: int):
    gen = torch.Generator().manual_seed(seed)
    log_prob = -torch.rand(batch, tokens, generator=gen) * 5
    adv = torch.randn(batch, generator=gen) * 2
    mask = (torch.rand(batch, tokens, generator=gen) > 0.3).float()
    return log_prob, adv, mask


@FAST
@given(
    seed=st.integers(0, 2**31 - 1),
    batch=st.integers(1, 4),
    tokens=st.integers(1, 6),
    name=st.sampled_from(["ppo_clip", "gspo", "cispo", "sapo"]),
    config=st.sampled_from(CONFIGS),
    mode=st.sampled_from(AGG_MODES),
)
def test_on_policy_gradient_is_the_plain_policy_gradient(seed, batch, tokens, name, config, mode):
    log_prob, adv, mask = _tensors(seed, batch, tokens)
    config = PolicyLossConfig(**{**config.__dict__, "agg": mode})
    new = log_prob.clone().requires_grad_()
    loss, _ = get_policy_loss(name)(new, log_prob, adv, mask, config)
    loss.backward()
    plain = log_prob.clone().requires_grad_()
    aggregate_loss(-adv.unsqueeze(-1) * plain, mask, mode).backward()
    assert torch.allclose(new.grad, plain.grad, atol=1e-6)


@FAST
@given(
    seed=st.integers(0, 2**31 - 1),
    batch=st.integers(1, 5),
    length=st.integers(1, 8),
    pad=st.integers(0, 3),
)
def test_aggregation_modes_agree_on_equal_lengths(seed, batch, length, pad):
    gen = torch.Generator().manual_seed(seed)
    loss = torch.randn(batch, length + pad, generator=gen)
    mask = torch.zeros(batch, length + pad)
    mask[:, :length] = 1.0
    token_mean = aggregate_loss(loss, mask, "token-mean")
    assert torch.allclose(aggregate_loss(loss, mask, "seq-mean-token-mean"), token_mean, atol=1e-6)
    assert torch.allclose(
        aggregate_loss(loss, mask, "seq-mean-token-sum-norm", L=length), token_mean, atol=1e-6
    )
    assert torch.allclose(
        aggregate_loss(loss, mask, "seq-mean-token-sum"), token_mean * length, atol=1e-5
    )


finite = st.floats(-1e30, 1e30, allow_nan=False, allow_infinity=False)


@st.composite
def step_batches(draw):
    n = draw(st.integers(1, 12))
    return {
        "scores": draw(st.lists(finite, min_size=n, max_size=n)),
        "returns": draw(st.lists(finite, min_size=n, max_size=n)),
        "groups": draw(st.lists(st.sampled_from(["a", "b", 3]), min_size=n, max_size=n)),
        "anchors": draw(st.lists(st.sampled_from(["s", "t", "u"]), min_size=n, max_size=n)),
        "entropies": draw(st.lists(st.floats(0, 1e30), min_size=n, max_size=n)),
        "next": draw(st.lists(st.floats(0, 1e30) | st.just(math.nan), min_size=n, max_size=n)),
    }


@settings(max_examples=40, deadline=None, database=None)
@given(batch=step_batches(), mode=st.sampled_from(["mean_std_norm", "mean_norm"]))
@example(  # entropies a subnormal apart: 1 / spread overflowed and EMPG gave NaN
    batch={"scores": [0.0, 0.0], "returns": [0.0, 0.0], "groups": ["a", "a"],
           "anchors": ["s", "s"], "entropies": [0.0, 2.225073858507203e-309],
           "next": [math.nan, 0.0]},
    mode="mean_std_norm",
)
def test_advantages_are_finite(batch, mode):
    grpo = grpo_advantage(batch["scores"], batch["groups"])
    gigpo = gigpo_advantage(
        batch["scores"], batch["returns"], batch["groups"], batch["anchors"], mode=mode
    )
    empg = empg_advantage(grpo, batch["entropies"], batch["next"])
    for adv in (grpo, gigpo, empg):
        assert adv.shape == (len(batch["scores"]),) and torch.isfinite(adv).all()


@FAST
@given(
    lengths=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    gamma=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_discounted_returns_match_a_reference_loop(lengths, gamma, seed):
    rng = np.random.default_rng(seed)
    traj = np.repeat(np.arange(len(lengths)), lengths)
    steps = np.concatenate([np.arange(n) for n in lengths])
    rewards = rng.normal(size=traj.size)
    expected = np.zeros(traj.size)
    for t in range(len(lengths)):
        idx = np.flatnonzero(traj == t)
        running = 0.0
        for i in idx[::-1]:
            running = rewards[i] + gamma * running
            expected[i] = running
    perm = rng.permutation(traj.size)
    got = discounted_returns(rewards[perm], traj[perm], steps[perm], gamma)
    assert np.allclose(got.numpy(), expected[perm].astype(np.float32), rtol=1e-5, atol=1e-5)


@FAST
@given(scores=st.lists(st.floats(-10, 10), min_size=2, max_size=10), seed=st.integers(0, 100))
def test_grpo_is_permutation_equivariant_and_centred(scores, seed):
    groups = [i % 3 for i in range(len(scores))]
    adv = grpo_advantage(scores, groups)
    perm = np.random.default_rng(seed).permutation(len(scores))
    shuffled = grpo_advantage(np.asarray(scores)[perm], np.asarray(groups)[perm])
    assert torch.allclose(shuffled, adv[perm], atol=1e-5)
    for g in set(groups):
        assert abs(adv[torch.tensor(groups) == g].sum().item()) < 1e-4
