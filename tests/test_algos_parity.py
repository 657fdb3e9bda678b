"""Parity with OpenRLHF's ``PolicyLoss`` and KL estimators where it is installed.

OpenRLHF (``pip install 'arlarena[openrlhf]'`` and ``pip install --no-deps openrlhf==0.11.2``)
supports PPO clip (token- and sequence-level aggregation, clip-higher, dual clip), GSPO and the
k1/k2/k3 KL estimators; CISPO, SAPO and sequence masking have no counterpart there. Its
``openrlhf.models`` package imports flash-attn, GPU-only: ``tests/openrlhf_cpu.py`` stubs it.
Skipped when openrlhf or DeepSpeed is not installed.
"""

import pytest
import torch

from arlarena_baselines.algos import PolicyLossConfig, get_policy_loss, kl_penalty
from arlarena_baselines.algos import metric_names as mn

pytest.importorskip("openrlhf")
pytest.importorskip("deepspeed")

from tests.openrlhf_cpu import gpu_only_stubs

with gpu_only_stubs():
    from openrlhf.models import loss as LOSS
    from openrlhf.models import utils as UTILS


def _inputs(seed=0, batch=6, tokens=9, drift=0.3):
    gen = torch.Generator().manual_seed(seed)
    old = -torch.rand(batch, tokens, generator=gen) * 3
    new = old + drift * torch.randn(batch, tokens, generator=gen)
    adv = torch.randn(batch, generator=gen)
    lengths = torch.randint(1, tokens + 1, (batch,), generator=gen)
    mask = (torch.arange(tokens) < lengths.unsqueeze(-1)).float()
    return new, old, adv, mask


CASES = [
    # (our loss, our config, OpenRLHF PolicyLoss kwargs)
    ("ppo_clip", PolicyLossConfig(), {}),
    ("ppo_clip", PolicyLossConfig(clip_high=0.28), {"clip_eps_high": 0.28}),
    ("ppo_clip", PolicyLossConfig(dual_clip=3.0), {"dual_clip": 3.0}),
    ("ppo_clip", PolicyLossConfig(agg="seq-mean-token-mean"), {"token_level_loss": False}),
    (
        "gspo",
        PolicyLossConfig(clip_low=3e-3, clip_high=4e-3, agg="seq-mean-token-mean"),
        {"policy_loss_type": "gspo", "clip_eps_low": 3e-3, "clip_eps_high": 4e-3},
    ),
    ("gspo", PolicyLossConfig(agg="seq-mean-token-mean"), {"policy_loss_type": "gspo"}),
]


@pytest.mark.parametrize(("name", "config", "kwargs"), CASES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_policy_loss_value_gradient_and_clip_fraction(name, config, kwargs, seed):
    new, old, adv, mask = _inputs(seed, drift=0.02 if name == "gspo" else 0.3)
    ours_lp = new.clone().requires_grad_()
    ours, metrics = get_policy_loss(name)(ours_lp, old, adv, mask, config)
    ours.backward()
    peer_lp = new.clone().requires_grad_()
    peer_kwargs = {"clip_eps_low": 0.2, "clip_eps_high": 0.2, **kwargs}
    peer_adv = adv.unsqueeze(-1).expand_as(new)
    peer, clip_ratio, *_ = LOSS.PolicyLoss(**peer_kwargs)(peer_lp, old, peer_adv, mask)
    peer.backward()
    assert ours.item() == pytest.approx(peer.item(), rel=1e-5, abs=1e-6)
    assert torch.allclose(ours_lp.grad, peer_lp.grad, atol=1e-6)
    if name == "ppo_clip":
        assert metrics[mn.CLIP_FRAC] == pytest.approx(clip_ratio.item(), abs=1e-6)


# OpenRLHF clamps every estimator to [−10, 10], we only k3: keep k1 / k2 inside the band and
# push k3 through its clamp.
@pytest.mark.parametrize(("estimator", "drift"), [("k1", 1.0), ("k2", 1.0), ("k3", 4.0)])
def test_kl_estimators(estimator, drift):
    new, old, _, _ = _inputs(drift=drift)
    ours_lp = new.clone().requires_grad_()
    peer_lp = new.clone().requires_grad_()
    ours = kl_penalty(ours_lp, old, estimator)
    peer = UTILS.compute_approx_kl(peer_lp, old, kl_estimator=estimator)
    ours.sum().backward()
    peer.sum().backward()
    assert torch.allclose(ours, peer, atol=1e-5)
    assert torch.allclose(ours_lp.grad, peer_lp.grad, atol=1e-5)
