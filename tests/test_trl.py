"""TRL's GRPOTrainer on an ARLArena env (``arlarena_baselines.integrations.trl``): real training
steps of a tiny model on a CPU through the rollout function, checked against TRL's own code,
and the method settings TRL accepts."""

from __future__ import annotations

import itertools
import os
from collections import Counter
from pathlib import Path

import pytest
import torch
from trl import GRPOConfig, GRPOTrainer

from arlarena_baselines.algos import METHODS
from arlarena_baselines.integrations.trl import (
    TRL_METHODS,
    ArenaRollout,
    episode_return,
    grpo_settings,
    task_dataset,
)
from arlarena_baselines.openrlhf.settings import task_from_label
from arlarena_baselines.trainer.config import ModelConfig
from arlarena_baselines.trainer.models import save_model, smollm2_tokenizer, tiny_model

GENERATIONS = 2


@pytest.fixture(scope="module")
def tiny(module_tmp) -> str:
    """A tiny random Llama saved as a folder (TRL loads its reference model from the path)."""
    tokenizer = smollm2_tokenizer()
    folder = module_tmp("tiny")
    return str(save_model(tiny_model(ModelConfig(name="tiny"), tokenizer), tokenizer, folder))


def _trainer(model: str, out: Path, rollout, method: str = "GRPO",
             near: bool = False) -> GRPOTrainer:
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    config = GRPOConfig(
        output_dir=str(out), max_steps=2, per_device_train_batch_size=4,
        num_generations=GENERATIONS, max_completion_length=256, temperature=0.9,
        learning_rate=1e-3, logging_steps=1, save_strategy="no", report_to="none", seed=0,
        use_cpu=True, bf16=False, gradient_checkpointing=False,
        **grpo_settings(method, near=near),
    )
    return GRPOTrainer(model=model, reward_funcs=episode_return, args=config,
                       train_dataset=task_dataset(range(6)), rollout_func=rollout)


def test_two_real_grpo_steps_on_sokoban_episodes(tiny, tmp_path):
    rollout = ArenaRollout("sokoban", template="sokoban_compact", max_turns=3, max_new_tokens=16)
    calls = []

    def recorded(prompts, trainer):
        out = rollout(prompts, trainer)
        calls.append((list(prompts), out))
        return out

    trainer = _trainer(tiny, tmp_path, recorded)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    assert trainer.state.global_step == 2 and len(calls) == 2
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.model.parameters(),
                                                     strict=True))
    tokenizer = trainer.processing_class
    logged = [r["reward"] for r in trainer.state.log_history if "reward" in r]
    for (prompts, out), reward in zip(calls, logged, strict=True):
        # TRL hands over each task num_generations times, and only the tasks: the lookup works
        assert set(Counter(prompts).values()) == {GENERATIONS}
        assert {task_from_label(p).seed for p in prompts} <= set(range(6))
        first = {}
        for i, label in enumerate(prompts):
            assert first.setdefault(label, out["prompt_ids"][i]) == out["prompt_ids"][i]
            ids, mask = out["completion_ids"][i], out["env_mask"][i]
            assert len(ids) == len(mask) == len(out["logprobs"][i]) and mask[0] == 1
            env_text = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m == 0])
            assert env_text.count("Sokoban:") == sum(  # each env turn is a whole prompt
                1 for a, b in itertools.pairwise(mask) if a == 1 and b == 0)
        # the reward TRL logs is the mean of the episodes' returns (format penalties included)
        assert reward == pytest.approx(sum(out["episode_return"]) / len(prompts), abs=1e-6)
        assert all(r < 0 for r in out["episode_return"])  # an untrained model: −0.1 a turn


def test_the_rollout_logprobs_are_trls_own(tiny, tmp_path):
    """TRL recomputes the completion's log-probs at its temperature: the sampling ones match."""
    rollout = ArenaRollout("ARLArena/Bandit-v0", max_new_tokens=8)
    trainer = _trainer(tiny, tmp_path, rollout)
    prompts = [task_dataset([3])[0]["prompt"]] * 2
    out = rollout(prompts, trainer)
    for prompt_ids, ids, logprobs in zip(out["prompt_ids"], out["completion_ids"],
                                         out["logprobs"], strict=True):
        input_ids = torch.tensor([prompt_ids + ids])
        with torch.no_grad():
            theirs, _, _ = trainer._get_per_token_logps_and_entropies(
                trainer.model, input_ids, torch.ones_like(input_ids), len(ids))
        assert torch.allclose(theirs[0], torch.tensor(logprobs), atol=1e-4)
    assert out["completion_ids"][0] != out["completion_ids"][1]  # two episodes, two streams


def test_grpo_settings_for_every_method():
    for name in METHODS:
        kind = TRL_METHODS[name][0]
        if kind == "exact":
            settings = grpo_settings(name)
            GRPOConfig(output_dir="unused", use_cpu=True, bf16=False, **settings)
        else:
            with pytest.raises(ValueError, match="arlarena train rl"):
                grpo_settings(name)
        if kind == "near":
            GRPOConfig(output_dir="unused", use_cpu=True, bf16=False,
                       **grpo_settings(name, near=True))
    assert {k for k, (kind, _) in TRL_METHODS.items() if kind == "exact"} == {"GRPO", "CISPO"}
    grpo, cispo_sm = grpo_settings("GRPO"), grpo_settings("CISPO_SM", "webshop", near=True)
    assert (grpo["loss_type"], grpo["importance_sampling_level"], grpo["delta"]) == (
        "dapo", "token", 3.0)
    assert (cispo_sm["loss_type"], cispo_sm["epsilon_high"]) == ("cispo", 1.2)
    assert cispo_sm["off_policy_mask_threshold"] == 3e-3 and grpo["beta"] == 0.01
    gspo = grpo_settings("GSPO", "webshop", near=True)
    assert (gspo["loss_type"], gspo["importance_sampling_level"], gspo["epsilon"]) == (
        "grpo", "sequence", 0.03)


@pytest.mark.parametrize("name", ["GRPO", "CISPO", "GRPO_SM", "CISPO_SM"])
def test_trls_loss_with_the_settings_is_the_methods_loss(tiny, tmp_path, name):
    """TRL's own loss code, given :func:`grpo_settings`, equals ARLArena's loss of the method
    (policy term, k3 KL, entropy bonus) on a batch whose ratios leave the clip band both ways;
    for the ``_SM`` methods, but for the documented difference: the sequences the mask drops
    still count in TRL's token mean."""
    from arlarena_baselines.algos import method_policy_loss, study_method
    from arlarena_baselines.algos.clipping import sequence_mask

    method = study_method(name)
    trainer = _trainer(tiny, tmp_path, ArenaRollout("ARLArena/Bandit-v0"), name, near=True)
    trainer.current_gradient_accumulation_steps = 1
    generator = torch.Generator().manual_seed(0)
    prompt = torch.randint(0, 1000, (4, 6), generator=generator)
    completion = torch.randint(0, 1000, (4, 10), generator=generator)
    mask = torch.ones_like(completion)
    mask[1, 7:] = 0  # a shorter completion
    advantages = torch.tensor([1.0, -0.5, 0.8, -1.2])
    logits = trainer.model(input_ids=torch.cat([prompt, completion], 1)).logits[:, 5:-1]
    logp_all = torch.log_softmax(logits.float() / trainer.temperature, -1)
    log_prob = logp_all.gather(-1, completion.unsqueeze(-1)).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    drift = torch.randn(log_prob.shape, generator=generator) * 0.3
    drift[1, 0] = -1.5  # a ratio of 4.5 on a negative advantage: past the dual clip (3)
    drift[3] = 0.05  # one negative-advantage row drifted as a whole: the sequence mask's case
    old = (log_prob + drift).detach()
    ref = (log_prob + torch.randn(log_prob.shape, generator=generator) * 0.2).detach()
    inputs = {
        "prompt_ids": prompt, "prompt_mask": torch.ones_like(prompt),
        "completion_ids": completion, "completion_mask": mask, "advantages": advantages,
        "old_per_token_logps": old, "ref_per_token_logps": ref,
        "num_items_in_batch": mask.sum(),
    }
    theirs = float(trainer._compute_loss(trainer.model, inputs))
    ours, _ = method_policy_loss(method, log_prob, old, advantages, mask.float(),
                                 ref_log_prob=ref, entropy=entropy)
    expected = float(ours)
    if method.sequence_mask:
        kept = sequence_mask(log_prob, old, advantages, mask.float(), method.delta)
        assert 0 < kept.sum() < mask.sum()  # the mask dropped a sequence
        policy, _ = method_policy_loss(method.with_overrides(sequence_mask=False), log_prob,
                                       old, advantages, kept)
        expected += float(policy) * (float(kept.sum() / mask.sum()) - 1.0)
    assert theirs == pytest.approx(expected, rel=1e-4, abs=1e-6)


def test_the_example_script_trains_and_saves(tmp_path):
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    subprocess.run(
        [sys.executable, str(root / "scripts" / "trl_grpo.py"), "--steps", "1", "--batch", "2",
         "--generations", "2", "--template", "sokoban_compact", "--max-turns", "1",
         "--max-new-tokens", "8", "--out", str(tmp_path)],
        check=True, cwd=root, timeout=600, capture_output=True,
    )
    assert (tmp_path / "final" / "model.safetensors").is_file()
