"""Stability metrics (hand-computed) and the collapse detector."""

import math

import pytest
import torch

from arlarena_baselines.algos import CollapseDetector, stability_metrics
from arlarena_baselines.algos import metric_names as mn

# Three samples of two tokens; the last token of the last sample is masked out.
RATIOS = torch.tensor([[1.5, 0.5], [1.0, 1.3], [0.5, 1.0]])
LOG_PROB = RATIOS.log()
OLD = torch.zeros(3, 2)
ADV = torch.tensor([1.0, -1.0, -1.0])
MASK = torch.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 0.0]])
REF = LOG_PROB + torch.tensor([[-0.1, 0.0], [0.0, -0.2], [-0.2, 5.0]])  # δ = log π_ref − log πθ
ENTROPY = torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.7, 0.0]])


def _k3(delta):
    return math.exp(delta) - delta - 1


def test_ratio_and_kl_metrics_by_hand():
    out = stability_metrics(LOG_PROB, OLD, ADV, MASK, ref_log_prob=REF)
    assert out[mn.OOB_FRAC] == pytest.approx(4 / 5)  # 1.5, 0.5, 1.3, 0.5 outside [0.8, 1.2]
    assert out[mn.STAB_OOB_LOW_FRAC] == pytest.approx(1 / 5)  # A < 0 and w = 0.5
    assert out[mn.STAB_OOB_HIGH_FRAC] == pytest.approx(1 / 5)  # A > 0 and w = 1.5
    assert out[mn.STAB_CLIP_FRAC] == pytest.approx(2 / 5)
    assert out[mn.OOB_POS_FRAC] == pytest.approx(2 / 5)  # A > 0: 1.5 and 0.5
    assert out[mn.OOB_NEG_FRAC] == pytest.approx(2 / 5)  # A < 0: 1.3 (above) and 0.5
    kl_old = sum(w * math.log(w) - (w - 1) for w in (1.5, 0.5, 1.0, 1.3, 0.5)) / 5
    assert out[mn.KL_OLD] == pytest.approx(kl_old, rel=1e-5)
    assert out[mn.KL_REF] == pytest.approx((_k3(-0.1) + 2 * _k3(-0.2)) / 5, rel=1e-4)
    assert not any(k in out for k in mn.KL_REF_SHARE_KEYS)  # no entropy given


@pytest.mark.parametrize("threshold", [0.5, None])  # None: the masked median, 0.7
def test_kl_ref_shares_by_group(threshold):
    out = stability_metrics(
        LOG_PROB, OLD, ADV, MASK, ref_log_prob=REF, entropy=ENTROPY, entropy_threshold=threshold
    )
    total = _k3(-0.1) + 2 * _k3(-0.2)
    expected = dict.fromkeys(mn.KL_REF_SHARE_KEYS, 0.0)
    # (0,0): A > 0, sequence ratio < 1, low entropy
    expected[mn.kl_ref_share_key(True, False, False)] = _k3(-0.1) / total
    # (1,1): A < 0, sequence ratio ≥ 1, low entropy
    expected[mn.kl_ref_share_key(False, True, False)] = _k3(-0.2) / total
    # (2,0): A < 0, sequence ratio < 1, high entropy
    expected[mn.kl_ref_share_key(False, False, True)] = _k3(-0.2) / total
    for key, value in expected.items():
        assert out[key] == pytest.approx(value, abs=1e-5), key
    assert sum(out[k] for k in mn.KL_REF_SHARE_KEYS) == pytest.approx(1.0)


def test_pass_through_counts_only_when_given():
    out = stability_metrics(
        LOG_PROB,
        OLD,
        ADV,
        MASK,
        grad_norm=2.5,
        groups_filtered=3,
        seqs_masked=1,
        valid_format_ratio=0.9,
        success_rate=0.4,
    )
    assert out[mn.GRAD_NORM] == 2.5 and out[mn.GROUPS_FILTERED] == 3.0
    assert out[mn.SEQS_MASKED] == 1.0 and out[mn.VALID_FORMAT_RATIO] == 0.9
    assert out[mn.SUCCESS_RATE] == 0.4
    assert mn.GRAD_NORM not in stability_metrics(LOG_PROB, OLD, ADV, MASK)


def test_all_zero_mask_is_finite():
    out = stability_metrics(
        LOG_PROB, OLD, ADV, torch.zeros(3, 2), ref_log_prob=REF, entropy=ENTROPY
    )
    assert all(math.isfinite(v) for v in out.values())


def _metrics(grad, kl, fmt):
    return {mn.GRAD_NORM: grad, mn.KL_REF: kl, mn.VALID_FORMAT_RATIO: fmt}


HEALTHY = [_metrics(1.0 + 0.1 * (i % 3), 0.01, 0.9) for i in range(6)]


def test_collapse_detected_after_patience():
    detector = CollapseDetector(warmup=5, patience=2)
    assert all(detector.update(m) is None for m in HEALTHY)
    assert detector.update(_metrics(30.0, 0.5, 0.5)) is None  # first suspicious update
    message = detector.update(_metrics(40.0, 0.8, 0.4))
    assert message is not None and detector.collapsed and detector.collapsed_at == 8
    assert "collapse" in message and "gradient norm" in message and "valid-format" in message


def test_no_collapse_while_format_holds_or_kl_is_calm():
    detector = CollapseDetector(warmup=5, patience=1)
    for m in HEALTHY:
        detector.update(m)
    assert detector.update(_metrics(30.0, 0.5, 0.9)) is None  # format holds
    assert detector.update(_metrics(30.0, 0.011, 0.4)) is None  # KL calm
    assert detector.update({mn.GRAD_NORM: 30.0}) is None  # incomplete metrics
    assert not detector.collapsed


def test_baseline_follows_slow_drift_but_not_spikes():
    detector = CollapseDetector(warmup=3, patience=1)
    for step in range(60):  # KL creeping up 5 % per update is not a collapse
        assert detector.update(_metrics(1.0, 0.01 * 1.05**step, 0.9)) is None
    spike = detector.update(_metrics(50.0, 10.0, 0.3))
    assert spike is not None
    assert detector.baseline["grad"] == pytest.approx(1.0)  # the spike did not enter it


def test_falls_back_to_kl_old():
    detector = CollapseDetector(warmup=2, patience=1)
    for _ in range(2):
        detector.update({mn.GRAD_NORM: 1.0, mn.KL_OLD: 0.01, mn.VALID_FORMAT_RATIO: 0.9})
    message = detector.update({mn.GRAD_NORM: 9.0, mn.KL_OLD: 0.2, mn.VALID_FORMAT_RATIO: 0.5})
    assert message is not None and mn.KL_OLD in message


def test_kl_share_groups_on_a_hand_made_batch():
    """Four sequences of two tokens, one token in each of the 8 groups: (sign A) × (sequence
    ratio below 1 or not) × (entropy below the threshold or not). Each group's share is its
    one token's k3 KL over the sum."""
    log_w = torch.tensor([[-0.2, -0.2], [0.1, 0.1], [-0.1, -0.1], [0.2, 0.2]])
    adv = torch.tensor([1.0, 0.0, -1.0, -2.0])  # A = 0 counts with A > 0 (A ≥ 0)
    entropy = torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    delta = torch.tensor([[-0.1, -0.2], [-0.3, -0.4], [-0.5, -0.6], [-0.7, -0.8]])
    out = stability_metrics(log_w, torch.zeros(4, 2), adv, torch.ones(4, 2),
                            ref_log_prob=log_w + delta, entropy=entropy, entropy_threshold=0.5)
    total = sum(_k3(d) for d in delta.flatten().tolist())
    groups = {  # (A ≥ 0, sequence ratio ≥ 1, entropy ≥ 0.5): the token's δ
        (True, False, False): -0.1, (True, False, True): -0.2,
        (True, True, True): -0.3, (True, True, False): -0.4,
        (False, False, False): -0.5, (False, False, True): -0.6,
        (False, True, True): -0.7, (False, True, False): -0.8,
    }
    for (pos, high_ratio, high_entropy), d in groups.items():
        key = mn.kl_ref_share_key(pos, high_ratio, high_entropy)
        assert out[key] == pytest.approx(_k3(d) / total, rel=1e-4), key


def _detector_run(detector, steps=8, collapse_from=None):
    """Feed ``steps`` updates of a calm run (±30% jitter) that collapses from
    ``collapse_from`` (gradient norm ×12, KL ×90, valid format 0.95 → 0.4); return the first
    update that fired, or ``None``."""
    jitter = [1.0, 1.3, 0.7, 1.2, 0.8, 1.25, 0.75, 1.1, 0.9, 1.0, 1.3, 0.7, 1.2, 0.8, 1.1, 0.9]
    for step in range(1, steps + 1):
        j = jitter[(step - 1) % len(jitter)]
        if collapse_from is not None and step >= collapse_from:
            metrics = {mn.GRAD_NORM: 12.0, mn.KL_OLD: 0.9, mn.VALID_FORMAT_RATIO: 0.4}
        else:
            metrics = {mn.GRAD_NORM: j, mn.KL_OLD: 0.01 * j, mn.VALID_FORMAT_RATIO: 0.95}
        if detector.update(metrics) is not None:
            return step
    return None


@pytest.mark.parametrize("steps, collapse_from, fired", [(8, 3, 3), (8, 6, 6), (16, 5, 6)])
def test_the_detector_fires_on_a_collapse_within_a_short_run(steps, collapse_from, fired):
    assert _detector_run(CollapseDetector.for_steps(steps), steps, collapse_from) == fired
    assert _detector_run(CollapseDetector.for_steps(steps), steps) is None  # calm: never
    if steps == 8 and collapse_from == 3:  # the defaults' warm-up swallows an early collapse
        assert _detector_run(CollapseDetector(), steps, collapse_from) is None
