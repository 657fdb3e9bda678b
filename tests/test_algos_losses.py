"""Policy losses, sequence mask and KL penalty: hand-computed values and gradients."""

import math

import pytest
import torch

from arlarena_baselines.algos import (
    POLICY_LOSSES,
    PolicyLossConfig,
    UnknownNameError,
    get_policy_loss,
    kl_penalty,
    register_policy_loss,
    sequence_mask,
)
from arlarena_baselines.algos import metric_names as mn

BUILT_IN = ["ppo_clip", "gspo", "cispo", "sapo"]
RATIOS = [1.0, 1.5, 0.5, 1.1, 4.0]
OLD = torch.full((2, 5), -1.0)


def _log_prob(ratios=RATIOS, rows=2):
    """log πθ = log w + log πold, leaf tensor requiring grad."""
    return (torch.log(torch.tensor([ratios] * rows)) - 1.0).requires_grad_()


ADV = torch.tensor([1.0, -1.0])  # one value per sample, broadcast over tokens
MASK = torch.ones(2, 5)


def _run(name, config, log_prob=None, adv=ADV, mask=MASK, old=OLD):
    log_prob = _log_prob() if log_prob is None else log_prob
    loss, metrics = get_policy_loss(name)(log_prob, old, adv, mask, config)
    loss.backward()
    return loss.item(), log_prob.grad, metrics


def test_ppo_clip_value_gradient_and_metrics():
    loss, grad, metrics = _run("ppo_clip", PolicyLossConfig())
    # A=+1: ℓ = −min(w, 1.2); A=−1: ℓ = max(w, 0.8)
    row0 = [-1.0, -1.2, -0.5, -1.1, -1.2]
    row1 = [1.0, 1.5, 0.8, 1.1, 4.0]
    assert loss == pytest.approx((sum(row0) + sum(row1)) / 10)
    # dℓ/dlog π = −A w where the unclipped branch is active, else 0; token-mean divides by 10
    expected = torch.tensor([[-1.0, 0, -0.5, -1.1, 0], [1.0, 1.5, 0, 1.1, 4.0]]) / 10
    assert torch.allclose(grad, expected, atol=1e-6)
    assert metrics[mn.CLIP_FRAC] == pytest.approx(0.3)
    assert metrics[mn.OOB_HIGH_FRAC] == pytest.approx(0.2)
    assert metrics[mn.OOB_LOW_FRAC] == pytest.approx(0.1)
    assert metrics[mn.RATIO_MEAN] == pytest.approx(sum(RATIOS) * 2 / 10)
    assert metrics[mn.PG_LOSS] == pytest.approx(loss)


def test_ppo_dual_clip_caps_negative_advantage_loss():
    loss, grad, metrics = _run("ppo_clip", PolicyLossConfig(dual_clip=3.0))
    row0 = [-1.0, -1.2, -0.5, -1.1, -1.2]
    row1 = [1.0, 1.5, 0.8, 1.1, 3.0]  # min(4.0, c=3)
    assert loss == pytest.approx((sum(row0) + sum(row1)) / 10)
    assert grad[1, 4].item() == 0.0
    assert metrics[mn.DUAL_CLIP_FRAC] == pytest.approx(0.1)


def test_ppo_clip_higher_uses_asymmetric_band():
    log_prob = _log_prob([1.25], rows=1)
    loss, grad, _ = _run(
        "ppo_clip", PolicyLossConfig(clip_high=0.28), log_prob, ADV[:1], MASK[:1, :1], OLD[:1, :1]
    )
    assert loss == pytest.approx(-1.25)  # inside [0.8, 1.28]: not clipped
    assert grad.item() == pytest.approx(-1.25)


def test_cispo_keeps_gradient_of_clipped_tokens():
    config = PolicyLossConfig(clip_low=1.0, clip_high=0.2)
    loss, grad, metrics = _run("cispo", config, _log_prob(rows=1), ADV[:1], MASK[:1], OLD[:1])
    weight = [1.0, 1.2, 0.5, 1.1, 1.2]  # clip(w, 0, 1.2)
    log_pi = [math.log(w) - 1.0 for w in RATIOS]
    assert loss == pytest.approx(
        sum(-c * lp for c, lp in zip(weight, log_pi, strict=True)) / 5, rel=1e-6
    )
    assert torch.allclose(grad, -torch.tensor([weight]) / 5)
    assert grad[0, 1].item() != 0.0  # w = 1.5 is clipped, yet it has a gradient
    assert metrics[mn.CLIP_FRAC] == pytest.approx(2 / 5)
    _, ppo_grad, _ = _run("ppo_clip", config, _log_prob(rows=1), ADV[:1], MASK[:1], OLD[:1])
    assert ppo_grad[0, 1].item() == 0.0  # PPO drops it


def test_sapo_at_ratio_one_value_and_plain_policy_gradient():
    log_prob = OLD.clone().requires_grad_()
    config = PolicyLossConfig(agg="seq-mean-token-mean")
    loss, grad, metrics = _run("sapo", config, log_prob)
    # f(1) = (4/τ) σ(0) = 2/τ; τ = 1 for A > 0, 1.05 for A < 0
    assert loss == pytest.approx((-2.0 + 2.0 / 1.05) / 2, rel=1e-5)
    assert torch.allclose(grad, -ADV.unsqueeze(-1).expand(2, 5) / 10)
    assert metrics[mn.SAPO_GATE_MEAN] == pytest.approx(0.5)


def test_sapo_gradient_away_from_ratio_one():
    log_prob = _log_prob([2.0], rows=1)
    loss, grad, _ = _run("sapo", PolicyLossConfig(), log_prob, ADV[:1], MASK[:1, :1], OLD[:1, :1])
    sig = 1 / (1 + math.exp(-1.0))  # σ(τ (w − 1)) with τ = 1, w = 2
    assert loss == pytest.approx(-4 * sig)
    assert grad.item() == pytest.approx(-4 * sig * (1 - sig) * 2.0)


GSPO_CONFIG = PolicyLossConfig(clip_low=0.2, clip_high=0.2, agg="seq-mean-token-mean")


def test_gspo_value_uses_masked_sequence_ratio():
    log_ratio = torch.tensor([[0.1, -0.1, 0.3, 5.0]])  # the last token is masked out
    log_prob = (log_ratio - 1.0).requires_grad_()
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    loss, grad, _ = _run("gspo", GSPO_CONFIG, log_prob, ADV[:1], mask, OLD[:1, :4])
    s = math.exp(0.1)
    assert loss == pytest.approx(-s)
    assert torch.allclose(grad, torch.tensor([[-s / 3, -s / 3, -s / 3, 0.0]]))
    tight = PolicyLossConfig(clip_low=3e-3, clip_high=4e-3, agg="seq-mean-token-mean")
    log_prob = (log_ratio - 1.0).requires_grad_()
    loss, grad, metrics = _run("gspo", tight, log_prob, ADV[:1], mask, OLD[:1, :4])
    assert loss == pytest.approx(-1.004)
    assert torch.count_nonzero(grad) == 0
    assert metrics[mn.CLIP_FRAC] == pytest.approx(1.0)


def test_gspo_token_gradient_is_sequence_gradient_spread_over_tokens():
    gen = torch.Generator().manual_seed(1)
    old = -torch.rand(3, 6, generator=gen)
    log_prob = (old + 0.05 * torch.randn(3, 6, generator=gen)).requires_grad_()
    mask = torch.tensor([[1.0] * 6, [1.0] * 4 + [0.0] * 2, [1.0] * 2 + [0.0] * 4])
    adv = torch.tensor([0.7, -1.2, 0.4])
    wide = PolicyLossConfig(clip_low=0.9, clip_high=5.0, agg="seq-mean-token-mean")
    _, grad, _ = _run("gspo", wide, log_prob, adv, mask, old)
    seq_log_prob = log_prob.detach().clone().requires_grad_()
    s = torch.exp(((seq_log_prob - old) * mask).sum(-1) / mask.sum(-1))
    (-(adv * s).mean()).backward()
    assert torch.allclose(grad, seq_log_prob.grad, atol=1e-6)


def test_gspo_log_ratio_clamped_at_ten():
    log_prob = torch.full((1, 3), 14.0).requires_grad_()  # log w = 15 on every token
    loss, grad, _ = _run("gspo", GSPO_CONFIG, log_prob, -ADV[:1], MASK[:1, :3], OLD[:1, :3])
    assert loss == pytest.approx(math.exp(10.0), rel=1e-5)
    assert torch.count_nonzero(grad) == 0


def test_log_ratio_clamped_to_twenty_keeps_everything_finite():
    log_prob = torch.tensor([[80.0, -80.0]]).requires_grad_()
    for name in BUILT_IN:
        log_prob.grad = None
        loss, metrics = get_policy_loss(name)(
            log_prob, torch.zeros(1, 2), -ADV[:1], MASK[:1, :2], PolicyLossConfig()
        )
        loss.backward()
        assert math.isfinite(loss.item()) and torch.isfinite(log_prob.grad).all()
        assert all(math.isfinite(v) for v in metrics.values())


@pytest.mark.parametrize("name", BUILT_IN)
@pytest.mark.parametrize("agg", ["token-mean", "seq-mean-token-mean"])
def test_all_zero_mask_gives_zero_loss_and_finite_metrics(name, agg):
    config = PolicyLossConfig(dual_clip=3.0, agg=agg)
    loss, grad, metrics = _run(name, config, mask=torch.zeros(2, 5))
    assert loss == 0.0 and torch.equal(grad, torch.zeros(2, 5))
    assert all(math.isfinite(v) for v in metrics.values())


def test_per_token_advantages_match_per_sample_advantages():
    per_token = ADV.unsqueeze(-1).expand(2, 5).contiguous()
    for name in BUILT_IN:
        config = PolicyLossConfig(dual_clip=3.0)
        a, ga, ma = _run(name, config, adv=ADV)
        b, gb, mb = _run(name, config, adv=per_token)
        assert a == pytest.approx(b) and torch.allclose(ga, gb) and ma == pytest.approx(mb)


def test_built_in_losses_are_registered():
    assert list(POLICY_LOSSES)[:4] == BUILT_IN


def test_unknown_loss_lists_known_names():
    with pytest.raises(UnknownNameError, match="ppo_clip, gspo, cispo, sapo"):
        get_policy_loss("ppo")
    with pytest.raises(KeyError):
        get_policy_loss("ppo")


def test_register_custom_loss_with_decorator():
    @register_policy_loss("test_reinforce", override=True)
    def reinforce(log_prob, old_log_prob, advantages, response_mask, config):
        loss = -(advantages.unsqueeze(-1) * log_prob * response_mask).sum() / response_mask.sum()
        return loss, {}

    assert get_policy_loss("test_reinforce") is reinforce
    with pytest.raises(ValueError, match="already registered"):
        register_policy_loss("test_reinforce")(reinforce)


def test_config_validation():
    with pytest.raises(ValueError):
        PolicyLossConfig(dual_clip=0.5)
    with pytest.raises(ValueError):
        PolicyLossConfig(agg="sum")


def test_sequence_mask_drops_drifted_negative_samples():
    # log πold − log πθ per token; each row's mean over valid tokens is the drift
    drift = torch.tensor(
        [
            [0.01, 0.01],  # A < 0, drift 0.01 > δ: dropped
            [0.01, 0.01],  # A > 0: kept
            [0.001, 0.001],  # A < 0, drift below δ: kept
            [-0.01, -0.01],  # A < 0, πθ above πold: kept
            [0.5, 0.5],  # empty row: stays empty
            [0.01, -1.0],  # A < 0, the −1.0 token is masked out: drift 0.01, dropped
        ]
    )
    old = torch.zeros(6, 2)
    log_prob = old - drift
    adv = torch.tensor([-1.0, 1.0, -1.0, -1.0, -1.0, -0.5])
    mask = torch.tensor([[1, 1], [1, 1], [1, 1], [1, 1], [0, 0], [1, 0]])
    out = sequence_mask(log_prob, old, adv, mask, 3e-3)
    expected = torch.tensor([[0, 0], [1, 1], [1, 1], [1, 1], [0, 0], [0, 0]])
    assert out.dtype == mask.dtype and torch.equal(out, expected)
    assert torch.equal(sequence_mask(log_prob, old, adv, mask.bool(), 3e-3), expected.bool())
    per_token = adv.unsqueeze(-1).expand(6, 2)
    assert torch.equal(sequence_mask(log_prob, old, per_token, mask, 3e-3), expected)


def test_kl_estimators_values_and_k3_gradient():
    log_prob = torch.tensor([0.0, -1.0, -2.0]).requires_grad_()
    ref = torch.tensor([-1.0, -1.0, 1.0])
    assert torch.allclose(kl_penalty(log_prob, ref, "k1"), torch.tensor([1.0, 0.0, -3.0]))
    assert torch.allclose(kl_penalty(log_prob, ref, "k2"), torch.tensor([0.5, 0.0, 4.5]))
    k3 = kl_penalty(log_prob, ref)  # δ = [−1, 0, 3]: e^δ − δ − 1, the last clamped to 10
    assert torch.allclose(k3, torch.tensor([math.exp(-1.0), 0.0, 10.0]))
    k3.sum().backward()
    assert torch.allclose(log_prob.grad, torch.tensor([1 - math.exp(-1.0), 0.0, 0.0]))


def test_kl_k3_extreme_values_are_finite():
    log_prob = torch.tensor([-200.0, 200.0]).requires_grad_()
    k3 = kl_penalty(log_prob, torch.zeros(2))
    k3.sum().backward()
    assert torch.allclose(k3, torch.tensor([10.0, 10.0]))
    assert torch.isfinite(log_prob.grad).all()
    with pytest.raises(ValueError, match="k3"):
        kl_penalty(log_prob, torch.zeros(2), "k4")
