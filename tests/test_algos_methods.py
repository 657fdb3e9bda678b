"""Methods: the table, lookups, overrides, and every method's loss + backward."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from arlarena_baselines.algos import (
    METHODS,
    Method,
    compute_advantages,
    get_method,
    kl_penalty,
    method_policy_loss,
    method_table_markdown,
    register_policy_loss,
    study_method,
)
from arlarena_baselines.algos import metric_names as mn
from tests.loss_oracle import expected_loss

NAMES = [
    "GRPO", "GRPO_ST", "GSPO", "CISPO", "SAPO", "GRPO_SM", "CISPO_SM", "SAPO_SM",
    "GiGPO", "EMPG", "DAPO_GRPO", "DAPO_GiGPO", "SAMPO",
]  # fmt: skip


def test_exactly_the_study_methods():
    assert list(METHODS) == NAMES
    for name in NAMES:
        assert get_method(name).name == name
        assert get_method(name.lower()) is get_method(name)


def test_unknown_method_lists_names():
    with pytest.raises(KeyError, match="GRPO, GRPO_ST, GSPO"):
        get_method("PPO")


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("GRPO", ("token-mean", "ppo_clip", "grpo", None, False)),
        ("GRPO_ST", ("seq-mean-token-mean", "ppo_clip", "grpo", None, False)),
        ("GSPO", ("seq-mean-token-mean", "gspo", "grpo", None, False)),
        ("CISPO", ("token-mean", "cispo", "grpo", None, False)),
        ("SAPO", ("token-mean", "sapo", "grpo", None, False)),
        ("GRPO_SM", ("token-mean", "ppo_clip", "grpo", None, True)),
        ("CISPO_SM", ("token-mean", "cispo", "grpo", None, True)),
        ("SAPO_SM", ("token-mean", "sapo", "grpo", None, True)),
        ("GiGPO", ("token-mean", "ppo_clip", "gigpo", None, False)),
        ("EMPG", ("token-mean", "ppo_clip", "empg", None, False)),
        ("DAPO_GRPO", ("token-mean", "ppo_clip", "grpo", "dapo", False)),
        ("DAPO_GiGPO", ("token-mean", "ppo_clip", "gigpo", "dapo", False)),
        ("SAMPO", ("seq-mean-token-mean", "gspo", "gigpo", "dapo", False)),
    ],
)
def test_parts_match_the_table(name, parts):
    m = get_method(name)
    assert (m.aggregation, m.clipping, m.advantage, m.filtering, m.sequence_mask) == parts


def test_registered_methods_carry_the_alfworld_column():
    # The per-env values themselves are pinned in tests/test_algos_study.py.
    for name in NAMES:
        assert get_method(name) == study_method(name, "alfworld") == study_method(name, "sokoban")
    assert study_method("GSPO", "webshop") != get_method("GSPO")


def test_overrides_are_validated():
    webshop = get_method("SAMPO").with_overrides(gigpo_mode="mean_norm", cold_start_steps=5)
    assert webshop.gigpo_mode == "mean_norm" and get_method("SAMPO").gigpo_mode == "mean_std_norm"
    with pytest.raises(TypeError, match="clip_high"):
        get_method("GRPO").with_overrides(clip_hi=0.3)
    with pytest.raises(ValueError, match="aggregation"):
        get_method("GRPO").with_overrides(aggregation="sum")
    with pytest.raises(KeyError, match="ppo_clip"):
        get_method("GRPO").with_overrides(clipping="ppo")
    with pytest.raises(dataclasses.FrozenInstanceError):
        get_method("GRPO").kl_coef = 0.0


def test_markdown_table_has_a_row_per_method():
    table = method_table_markdown()
    rows = table.splitlines()
    assert len(rows) == 2 + len(NAMES)
    for name, row in zip(NAMES, rows[2:], strict=True):
        assert row.startswith(f"| {name} |")
    assert "clip_high=0.28" in table and "δ=0.003" in table


def _batch(n=8, tokens=12, seed=0):
    gen = torch.Generator().manual_seed(seed)
    old = -torch.rand(n, tokens, generator=gen) * 2
    log_prob = (old + 0.1 * torch.randn(n, tokens, generator=gen)).requires_grad_()
    lengths = torch.randint(0, tokens + 1, (n,), generator=gen)
    lengths[0] = 0  # one empty response
    mask = (torch.arange(tokens) < lengths.unsqueeze(-1)).float()
    traj = torch.arange(n) // 2
    rollout = {
        "episode_scores": torch.rand(n // 2, generator=gen).round()[traj],
        "group_ids": [f"task{int(t) // 2}" for t in traj],
        "traj_ids": traj,
        "steps": torch.arange(n) % 2,
        "step_rewards": torch.rand(n, generator=gen),
        "anchors": [f"obs {i % 3}" for i in range(n)],
        "entropies": torch.rand(n, generator=gen),
    }
    return log_prob, old, mask, rollout


@pytest.mark.parametrize("name", NAMES)
def test_every_method_runs_loss_and_backward(name):
    log_prob, old, mask, rollout = _batch()
    adv = compute_advantages(name, **rollout)
    assert adv.shape == (8,) and torch.isfinite(adv).all()
    ref = old + 0.05
    entropy = torch.rand(8, 12, requires_grad=True)
    loss, metrics = method_policy_loss(
        name, log_prob, old, adv, mask, ref_log_prob=ref, entropy=entropy
    )
    loss.backward()
    assert math.isfinite(loss.item()) and torch.isfinite(log_prob.grad).all()
    assert log_prob.grad.abs().sum() > 0 and entropy.grad is not None
    for key in (mn.CLIP_FRAC, mn.RATIO_MEAN, mn.SEQS_MASKED, mn.KL_LOSS, mn.ENTROPY, mn.TOTAL_LOSS):
        assert math.isfinite(metrics[key])


def test_regularisers_add_beta_kl_and_subtract_entropy_bonus():
    log_prob, old, mask, rollout = _batch()
    method = get_method("GRPO").with_overrides(kl_coef=0.05, entropy_coef=0.01)
    adv = compute_advantages(method, **rollout)
    ref = old - 0.2
    entropy = torch.rand(8, 12)
    base, _ = method_policy_loss(method, log_prob, old, adv, mask)
    full, metrics = method_policy_loss(
        method, log_prob, old, adv, mask, ref_log_prob=ref, entropy=entropy
    )
    kl = (kl_penalty(log_prob, ref) * mask).sum() / mask.sum()
    ent = (entropy * mask).sum() / mask.sum()
    assert full.item() == pytest.approx((base + 0.05 * kl - 0.01 * ent).item(), rel=1e-5)
    assert metrics[mn.KL_LOSS] == pytest.approx(kl.item(), rel=1e-5)


def test_sequence_mask_methods_report_dropped_sequences():
    old = torch.zeros(3, 4)
    log_prob = (old - 0.01).requires_grad_()  # drift 0.01 > δ on every row
    adv = torch.tensor([-1.0, 1.0, -1.0])
    mask = torch.ones(3, 4)
    _, metrics = method_policy_loss("GRPO_SM", log_prob, old, adv, mask)
    assert metrics[mn.SEQS_MASKED] == 2.0 and metrics[mn.SEQS_MASKED_FRAC] == pytest.approx(2 / 3)
    _, metrics = method_policy_loss("GRPO", log_prob, old, adv, mask)
    assert metrics[mn.SEQS_MASKED] == 0.0


def test_a_renamed_method_behaves_identically():
    """The trainer path reads the parts, never the name."""
    log_prob, old, mask, rollout = _batch(seed=3)
    clone = dataclasses.replace(get_method("SAMPO"), name="MyRecipe")
    adv_a = compute_advantages("SAMPO", **rollout)
    adv_b = compute_advantages(clone, **rollout)
    assert torch.equal(adv_a, adv_b)
    loss_a, _ = method_policy_loss("SAMPO", log_prob, old, adv_a, mask)
    loss_b, _ = method_policy_loss(clone, log_prob, old, adv_b, mask)
    assert loss_a.item() == loss_b.item()


def test_a_user_loss_plugs_into_a_method():
    @register_policy_loss("test_plain_pg", override=True)
    def plain_pg(log_prob, old_log_prob, advantages, response_mask, config):
        loss = -(advantages.unsqueeze(-1) * log_prob * response_mask).sum() / response_mask.sum()
        return loss, {}

    method = Method("PG", "token-mean", "test_plain_pg", "grpo")
    log_prob, old, mask, rollout = _batch()
    adv = compute_advantages(method, **rollout)
    loss, metrics = method_policy_loss(method, log_prob, old, adv, mask)
    loss.backward()
    assert torch.allclose(log_prob.grad, -adv.unsqueeze(-1) * mask / mask.sum())
    assert metrics[mn.SEQS_MASKED] == 0.0


def test_compute_advantages_names_missing_fields():
    with pytest.raises(ValueError, match="entropies"):
        compute_advantages(
            "EMPG", episode_scores=[1.0, 0.0], group_ids=[0, 0], traj_ids=[0, 1], steps=[0, 0]
        )


# A batch on which every method's settings show: (advantage, log πθ − log πold per token,
# response length). Row 0 crosses 1 + ε_high (1.35; 1.246 lies between DAPO's 1.28 and
# 1.2); row 1 falls below 1 − ε_low (0.67) and above the dual clip c = 3 (3.32), its sequence
# ratio 1.21 above GSPO's band; row 2 sits inside even GSPO's band; row 3 drifts (mean
# log πold/πθ 0.013 > δ) with A > 0, row 4 with A < 0 (the only row the _SM methods drop,
# and below GSPO's band); row 5 is empty. Padding holds large values the mask must hide.
ORACLE_ROWS = [
    (1.0, [0.30, -0.10, 0.05, 9.0], 3),
    (-0.5, [-0.40, 1.20, 0.02, -0.05], 4),
    (-1.5, [1e-4, -1e-4, 5e-5, -3.0], 3),
    (0.7, [-0.01, 0.22, -0.25, 5.0], 3),
    (-0.8, [-0.01, -0.005, -0.02, -0.001], 4),
    (0.3, [0.5, -0.5, 2.0, 1.0], 0),
]


def _oracle_batch(per_token: bool = False) -> dict[str, torch.Tensor]:
    """The rows above in float64, with log πold, π_ref and entropies that vary per token."""
    gen = torch.Generator().manual_seed(11)
    shape = (len(ORACLE_ROWS), 4)
    old = -0.2 - 2.0 * torch.rand(shape, generator=gen, dtype=torch.float64)
    drift = torch.tensor([row[1] for row in ORACLE_ROWS], dtype=torch.float64)
    mask = (torch.arange(4) < torch.tensor([[row[2]] for row in ORACLE_ROWS])).double()
    adv = torch.tensor([row[0] for row in ORACLE_ROWS], dtype=torch.float64)
    if per_token:  # two "turns" per row, with advantages of the same sign
        adv = adv.unsqueeze(-1) * torch.tensor([1.0, 1.0, 0.5, 0.5], dtype=torch.float64)
    return {
        "log_prob": old + drift, "old": old, "adv": adv, "mask": mask,
        "ref": old + 0.3 * torch.randn(shape, generator=gen, dtype=torch.float64),
        "entropy": torch.rand(shape, generator=gen, dtype=torch.float64),
    }


@pytest.mark.parametrize("per_token", [False, True], ids=["per-sample", "per-token"])
@pytest.mark.parametrize("name", NAMES)
def test_every_methods_loss_and_gradients_equal_the_formulas(name, per_token):
    """Each method with its own settings (ε, dual clip, τ, δ, aggregation, β, entropy
    coefficient) against the numpy oracle of docs/algorithms.md (tests/loss_oracle.py)."""
    batch = _oracle_batch(per_token)
    log_prob = batch["log_prob"].clone().requires_grad_()
    entropy = batch["entropy"].clone().requires_grad_()
    method = get_method(name)
    loss, metrics = method_policy_loss(method, log_prob, batch["old"], batch["adv"],
                                       batch["mask"], ref_log_prob=batch["ref"], entropy=entropy)
    loss.backward()
    want = expected_loss(method, batch["log_prob"], batch["old"], batch["adv"], batch["mask"],
                         ref_log_prob=batch["ref"], entropy=batch["entropy"])
    # float64 throughout; the clip bounds are float32 constants in the code (1.2 + 5e-8)
    assert loss.item() == pytest.approx(want.loss, rel=1e-7)
    np.testing.assert_allclose(log_prob.grad.numpy(), want.grad, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(entropy.grad.numpy(), want.entropy_grad, rtol=1e-7, atol=1e-12)
    assert metrics[mn.SEQS_MASKED] == want.seqs_masked == (1 if method.sequence_mask else 0)


def test_the_oracle_batch_reaches_every_setting():
    """Each setting changes the oracle's loss on the batch: a method test that ignored one
    would fail (e.g. SAPO's τ_pos and τ_neg swapped)."""
    batch = _oracle_batch()

    def value(method: Method) -> float:
        return expected_loss(method, batch["log_prob"], batch["old"], batch["adv"],
                             batch["mask"], batch["ref"], batch["entropy"]).loss

    changes = {
        "GRPO": {"clip_low": 0.1, "clip_high": 0.1, "dual_clip": None, "kl_coef": 0.0,
                 "entropy_coef": 0.0, "aggregation": "seq-mean-token-mean"},
        "DAPO_GiGPO": {"clip_high": 0.2},
        "GSPO": {"clip_low": 0.003, "clip_high": 0.004},
        "CISPO": {"clip_low": 0.2, "clip_high": 0.28},
        "SAPO": {"tau_pos": get_method("SAPO").tau_neg, "tau_neg": get_method("SAPO").tau_pos},
        "GRPO_SM": {"delta": 0.01, "sequence_mask": False},
    }
    for name, fields in changes.items():
        method = get_method(name)
        for field, changed in fields.items():
            assert value(method.with_overrides(**{field: changed})) != pytest.approx(
                value(method), rel=1e-6), (name, field)
