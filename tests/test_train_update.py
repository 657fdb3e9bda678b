"""The RL update does what it promises, checked by value on a tiny random model.

- π_old is the distribution sampled: before any optimizer step the ratio is 1 on every token of
  the first update mini-batch and the k3 KL to π_ref is 0, also at T != 1, where every log-prob
  is of softmax(logits / T); truncated or greedy training sampling is refused.
- Several update mini-batches per rollout batch make the later ones off-policy; a count of
  them cuts every batch into that many, whatever its size.
- Micro-batches add up to the full mini-batch's gradient in every aggregation mode.
- Gradient clipping bounds the step; a non-finite gradient skips it.
- DAPO resamples until its round limit when every group is filtered out, then tops up.
"""

from __future__ import annotations

import json

import pytest
import torch

from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.rollout import pack_pairs, response_log_probs
from arlarena_baselines.trainer.config import load_config
from arlarena_baselines.trainer.rl import RLTrainer
from arlarena_baselines.trainer.tracking import EVAL_EPISODES_FILE, METRICS_FILE, read_metrics

pytestmark = pytest.mark.usefixtures("isolated_cache")

BANDIT = "ARLArena/Bandit-v0"


def make_trainer(tmp_path, *overrides: str, resume: bool = False) -> RLTrainer:
    config = load_config(None, [
        "model.name=tiny", f"rollout.env={BANDIT}", "rollout.env_kwargs={rounds: 2}",
        "rollout.max_new_tokens=8", "rollout.n_groups=2", "rollout.group_size=4",
        "rl.method=GRPO", "rl.lr=1e-3", "eval.episodes=0", "run.threads=1",
        "run.progress=false", "run.tensorboard=false", f"run.out={tmp_path}", *overrides,
    ])
    return RLTrainer(config, resume=resume)


def random_advantages(n: int) -> torch.Tensor:
    return torch.randn(n, generator=torch.Generator().manual_seed(0))


def run_updates(trainer: RLTrainer, batch, advantages):
    """Every update mini-batch of step 0 in turn; the detached rows of each, in order."""
    reference = trainer.reference_log_probs(batch)
    rows, losses, norms = [], [], []
    for index in trainer.mini_batches(batch, 0, 0):
        norms.append(trainer.update([batch[i] for i in index], advantages[index],
                                    [reference[i] for i in index], rows, losses))
    return rows, losses, norms


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_the_first_update_is_on_policy_and_later_ones_are_not(tmp_path, temperature):
    trainer = make_trainer(tmp_path, f"rollout.temperature={temperature}",
                           "rl.mini_batch_size=4")
    try:
        batch = trainer.rollout(0, 0).samples
        assert len(batch) == 16 and trainer.policy.temperature == temperature
        # π_old is softmax(logits / T): the distribution the rollout sampled from.
        sample = batch[0]
        packed = pack_pairs([sample.prompt_ids], [sample.response_ids], trainer.policy.pad_id)
        with torch.no_grad():
            at_t, _ = response_log_probs(trainer.policy.model.eval(), packed,
                                         temperature=temperature)
        assert sample.old_log_probs == pytest.approx(at_t[0].tolist(), abs=1e-5)
        rows, losses, _ = run_updates(trainer, batch, random_advantages(len(batch)))
    finally:
        trainer.close()
    assert len(rows) == 4  # 16 step samples in mini-batches of 4, one micro-batch each
    first, last = rows[0], rows[-1]
    on = first.mask > 0
    assert (first.log_prob - first.old_log_prob)[on].abs().max() < 1e-5
    delta = (first.ref_log_prob - first.log_prob)[on]
    k3 = delta.exp() - delta - 1
    assert k3.abs().max() < 1e-10
    assert losses[0]["actor/ratio_mean"] == pytest.approx(1.0, abs=1e-5)
    # Three optimizer steps later the policy has left π_old.
    off = last.mask > 0
    log_ratio = (last.log_prob - last.old_log_prob)[off]
    assert log_ratio.abs().mean() > 1e-3
    assert (log_ratio.exp() - 1 - log_ratio).mean() > 1e-6  # k3 estimate of KL(π_old, πθ)


@pytest.mark.parametrize(("samples", "count", "sizes"), [(16, 3, [6, 5, 5]), (2, 4, [1, 1])])
def test_a_count_of_mini_batches_cuts_each_batch_into_that_many(tmp_path, samples, count,
                                                                sizes):
    trainer = make_trainer(tmp_path, f"rl.mini_batches={count}", "rl.mini_batch_size=4")
    try:
        batch = list(range(samples))
        chunks = trainer.mini_batches(batch, 0, 0)
        again = trainer.mini_batches(batch, 0, 0)
    finally:
        trainer.close()
    assert [len(c) for c in chunks] == sizes  # the count wins over the size
    assert sorted(i for c in chunks for i in c) == batch and chunks == again


def test_a_count_of_mini_batches_below_one_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"rl\.mini_batches"):
        make_trainer(tmp_path, "rl.mini_batches=0")


@pytest.mark.parametrize("setting", ["rollout.top_k=50", "rollout.top_p=0.9",
                                     "rollout.temperature=0"])
def test_training_sampling_that_is_not_the_full_softmax_is_refused(tmp_path, setting):
    with pytest.raises(ValueError, match="rollout"):
        make_trainer(tmp_path / "run", setting)
    assert not (tmp_path / "run").exists()


def param_delta(trainer: RLTrainer, batch, advantages, reference) -> tuple[torch.Tensor, float]:
    """The change of the parameters after one update of ``batch`` with SGD at lr 1 (i.e. the
    clipped gradient), and the gradient norm reported."""
    params = list(trainer.policy.model.parameters())
    trainer.optimizer = torch.optim.SGD(params, lr=1.0)
    before = torch.cat([p.detach().flatten().clone() for p in params])
    norm = trainer.update(batch, advantages, reference, [], [])
    after = torch.cat([p.detach().flatten() for p in params])
    return before - after, norm


@pytest.mark.parametrize("method,overrides", [
    ("GRPO", []),
    ("GRPO_ST", []),
    ("GSPO", []),
    ("GRPO", ["rl.method_overrides={aggregation: seq-mean-token-sum}"]),
])
def test_micro_batches_add_up_to_the_mini_batch_gradient(tmp_path, method, overrides):
    deltas = []
    for micro in (16, 3, 1):
        trainer = make_trainer(tmp_path / str(micro), f"rl.method={method}",
                               f"rl.micro_batch_size={micro}", "rl.grad_clip=1e9", *overrides)
        try:
            batch = trainer.rollout(0, 0).samples
            reference = trainer.reference_log_probs(batch)
            delta, _ = param_delta(trainer, batch, random_advantages(len(batch)), reference)
        finally:
            trainer.close()
        deltas.append(delta)
    scale = float(deltas[0].abs().max())
    assert scale > 0
    for delta in deltas[1:]:
        assert float((delta - deltas[0]).abs().max()) < 1e-5 * max(scale, 1.0)


def test_gradient_clipping_bounds_the_step_and_reports_the_raw_norm(tmp_path):
    results = []
    for clip in (1e9, 1e-3):
        trainer = make_trainer(tmp_path / str(clip), f"rl.grad_clip={clip}")
        try:
            batch = trainer.rollout(0, 0).samples
            reference = trainer.reference_log_probs(batch)
            results.append(param_delta(trainer, batch, random_advantages(len(batch)),
                                       reference))
        finally:
            trainer.close()
    (free, raw_norm), (clipped, reported) = results
    assert reported == pytest.approx(raw_norm, rel=1e-5) and raw_norm > 1e-3
    assert float(free.norm()) == pytest.approx(raw_norm, rel=1e-4)
    assert float(clipped.norm()) == pytest.approx(1e-3, rel=1e-3)


def test_a_non_finite_gradient_skips_the_optimizer_step(tmp_path):
    trainer = make_trainer(tmp_path)
    try:
        batch = trainer.rollout(0, 0).samples
        reference = trainer.reference_log_probs(batch)
        advantages = random_advantages(len(batch))
        advantages[3] = float("nan")
        params = list(trainer.policy.model.parameters())
        before = [p.detach().clone() for p in params]
        norm = trainer.update(batch, advantages, reference, [], [])
        assert norm != norm  # NaN
        assert all(torch.equal(a, p.detach()) for a, p in zip(before, params, strict=True))
        assert not trainer.optimizer.state  # AdamW never stepped
        assert all(p.grad is None for p in params)
    finally:
        trainer.close()


def test_dapo_resamples_until_its_round_limit_when_every_group_is_dropped(tmp_path):
    # An untrained model never answers in the format: every return is the same penalty.
    trainer = make_trainer(
        tmp_path, "rl.method=DAPO_GRPO",
        "rl.method_overrides={cold_start_steps: 0, max_num_gen_batches: 3}",
    )
    try:
        metrics = trainer.train_step(0)
    finally:
        trainer.close()
    assert metrics[mn.ROUNDS] == 3.0
    assert metrics[mn.EPISODES] == 3 * 2 * 4  # three rounds of 2 tasks x 4 rollouts
    # The first two rounds' groups are dropped; the last round tops the batch up to its 2
    # groups with all-equal ones, as the study's filter_group_data does.
    assert metrics[mn.GROUPS_FILTERED] == 4.0 and metrics[mn.GROUPS_TOPPED_UP] == 2.0
    assert metrics[mn.SAMPLES] == 2 * 4 * 2


def test_resuming_a_run_killed_before_its_first_checkpoint_starts_it_over(tmp_path):
    make_trainer(tmp_path).close()
    for name in (METRICS_FILE, EVAL_EPISODES_FILE):
        (tmp_path / name).write_text(json.dumps({"phase": "rl", "step": 0, "x": 1.0}) + "\n"
                                     + json.dumps({"phase": "rl", "step": 1, "x": 2.0}) + "\n")
    trainer = make_trainer(tmp_path, resume=True)
    try:
        assert trainer.step == 0
        assert read_metrics(tmp_path / METRICS_FILE) == []
        assert read_metrics(tmp_path / EVAL_EPISODES_FILE) == []
    finally:
        trainer.close()


def test_skipped_reference_and_entropy_passes_leave_the_loss_as_it_was(tmp_path):
    """With ``kl_coef`` and ``entropy_coef`` at 0 the trainer builds no reference model and
    computes no full-vocabulary entropy; the update's loss and step are those of a trainer that
    computes both (coefficients of 1e-30: their terms are there and weigh nothing)."""
    results = []
    for coef in ("0.0", "1.0e-30"):
        trainer = make_trainer(tmp_path / coef, "rl.grad_clip=1e9",
                               f"rl.method_overrides={{kl_coef: {coef}, entropy_coef: {coef}}}")
        try:
            assert (trainer.reference is None) == (coef == "0.0")
            batch = trainer.rollout(0, 0).samples
            reference = trainer.reference_log_probs(batch)
            losses: list[dict[str, float]] = []
            params = list(trainer.policy.model.parameters())
            trainer.optimizer = torch.optim.SGD(params, lr=1.0)
            before = torch.cat([p.detach().flatten().clone() for p in params])
            trainer.update(batch, random_advantages(len(batch)), reference, [], losses)
            after = torch.cat([p.detach().flatten() for p in params])
        finally:
            trainer.close()
        results.append((losses[0], before - after))
    (skipped, step), (computed, step_computed) = results
    assert mn.KL_LOSS not in skipped and mn.KL_LOSS in computed
    assert skipped[mn.TOTAL_LOSS] == pytest.approx(computed[mn.TOTAL_LOSS], abs=1e-7)
    assert float(step.abs().max()) > 0
    assert torch.allclose(step, step_computed, atol=1e-6)
    # The logged entropy is the one-sample estimate (-log π of the sampled tokens) when the
    # full one is not computed: both estimate the same mean entropy.
    assert skipped[mn.ENTROPY] == pytest.approx(computed[mn.ENTROPY], rel=0.1)
