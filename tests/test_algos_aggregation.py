"""Loss aggregation: hand-computed values, empty rows, all-zero masks, micro-batching."""

import pytest
import torch

from arlarena_baselines.algos import AGG_MODES, aggregate_loss, aggregation_denominator

LOSS = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0], [9.0, 9.0, 9.0]])
MASK = torch.tensor([[1, 1, 1], [1, 0, 0], [0, 0, 0]])  # the last row is empty


@pytest.mark.parametrize(
    ("mode", "L", "expected"),
    [
        ("token-mean", None, (1 + 2 + 3 + 4) / 4),
        ("seq-mean-token-mean", None, (6 / 3 + 4 / 1) / 2),
        ("seq-mean-token-sum", None, (6 + 4) / 2),
        ("seq-mean-token-sum-norm", None, (6 / 3 + 4 / 3) / 2),
        ("seq-mean-token-sum-norm", 5, (6 / 5 + 4 / 5) / 2),
    ],
)
def test_values_ignore_empty_rows(mode, L, expected):
    assert aggregate_loss(LOSS, MASK, mode, L).item() == pytest.approx(expected)


def test_token_mean_gradient_is_mask_over_token_count():
    loss = LOSS.clone().requires_grad_()
    aggregate_loss(loss, MASK, "token-mean").backward()
    assert torch.allclose(loss.grad, MASK.float() / 4)


def test_seq_mean_token_mean_gradient_weights_each_sequence_equally():
    loss = LOSS.clone().requires_grad_()
    aggregate_loss(loss, MASK, "seq-mean-token-mean").backward()
    expected = torch.tensor([[1 / 6, 1 / 6, 1 / 6], [1 / 2, 0, 0], [0, 0, 0]])
    assert torch.allclose(loss.grad, expected)


@pytest.mark.parametrize("mode", AGG_MODES)
def test_all_zero_mask_gives_zero_with_gradient(mode):
    loss = LOSS.clone().requires_grad_()
    out = aggregate_loss(loss, torch.zeros_like(MASK), mode)
    assert out.item() == 0.0 and out.requires_grad
    out.backward()
    assert torch.equal(loss.grad, torch.zeros_like(LOSS))


def test_bool_mask_matches_int_mask():
    assert aggregate_loss(LOSS, MASK.bool()).item() == aggregate_loss(LOSS, MASK).item()


def test_unknown_mode_lists_known_modes():
    with pytest.raises(ValueError, match="seq-mean-token-mean"):
        aggregate_loss(LOSS, MASK, "mean")


@pytest.mark.parametrize("mode", AGG_MODES)
def test_micro_batches_rescaled_by_denominator_equal_the_mini_batch(mode):
    gen = torch.Generator().manual_seed(0)
    loss = torch.randn(6, 5, generator=gen)
    mask = (torch.rand(6, 5, generator=gen) > 0.4).long()
    mask[2] = 0
    full = aggregate_loss(loss, mask, mode, L=5)
    parts = [(loss[:3], mask[:3]), (loss[3:], mask[3:])]
    total = sum(aggregation_denominator(m, mode) for _, m in parts)
    assert total == aggregation_denominator(mask, mode)
    summed = sum(
        aggregate_loss(x, m, mode, L=5) * aggregation_denominator(m, mode) for x, m in parts
    )
    assert torch.allclose(summed / total, full)
