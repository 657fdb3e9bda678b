"""The plug-in in a real Ray worker: OpenRLHF's own classes, patched by the setup hook.

Ray starts with ``worker_process_setup_hook=arlarena_baselines.openrlhf.plugin.install``; a
worker then imports OpenRLHF's ``openrlhf.models.loss`` and ``experience_maker`` (DeepSpeed,
PEFT and Ray are real; flash-attn and vLLM, GPU-only, are stubbed at import time by
``tests/openrlhf_cpu.py``) and computes:

- the loss of a ``PolicyLoss`` built from the flags ``train.sh`` passes (parsed by OpenRLHF's
  own parser): for PPO-clip and GSPO methods it equals OpenRLHF's own loss (value and gradient,
  with the global normalisers of a data-parallel step); for CISPO, SAPO and the
  sequence-masked methods it equals ``arlarena_baselines.algos`` and differs from OpenRLHF's;
- the advantages of ``RemoteExperienceMaker`` on experiences made by OpenRLHF's own
  ``_process_response_into_experience`` from agent episodes: each turn's tokens carry the
  advantage ``arlarena_baselines.algos`` gives that turn when the same episodes are played
  straight on the env.

Without ``ARLARENA_METHOD`` the patched loss is OpenRLHF's: it equals an unpatched
``PolicyLoss`` in this process.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
import torch

pytest.importorskip("deepspeed")
pytest.importorskip("peft")
ray = pytest.importorskip("ray")
pytest.importorskip("openrlhf.utils.agent")

from tests.openrlhf_cpu import gpu_only_stubs  # noqa: E402

with gpu_only_stubs():
    from openrlhf.models.loss import PolicyLoss

import wrappers.agents  # noqa: E402, F401  (registers the scripted agents)
from arlarena_baselines.algos import (  # noqa: E402
    compute_advantages,
    get_method,
    method_policy_loss,
)
from arlarena_baselines.openrlhf.agent import AgentExecutor  # noqa: E402
from arlarena_baselines.openrlhf.cli import parse_train_args  # noqa: E402
from arlarena_baselines.openrlhf.launch import SETUP_HOOK, Launch, openrlhf_args  # noqa: E402
from arlarena_baselines.openrlhf.settings import AgentSettings, Task  # noqa: E402
from arlarena_baselines.trainer.models import smollm2_tokenizer  # noqa: E402
from tests.openrlhf_scripted import play, run_executor  # noqa: E402
from wrappers.agents.base import make_agent  # noqa: E402

GROUP = 4  # episodes per task in the advantage test


@ray.remote(num_cpus=0)
class OpenRLHFWorker:
    """A Ray worker that loads OpenRLHF's training modules (the setup hook patches them)."""

    def __init__(self) -> None:
        from tests.openrlhf_cpu import gpu_only_stubs

        with gpu_only_stubs():
            from openrlhf.models import loss
            from openrlhf.trainer.ppo_utils import (
                experience_maker,
                kl_controller,
                samples_generator,
            )

        self.loss, self.maker = loss, experience_maker
        self.kl, self.samples = kl_controller, samples_generator

    def patched(self) -> list[bool]:
        from arlarena_baselines.openrlhf.plugin import PATCHES

        return [patch.applied() for patch in PATCHES]

    @staticmethod
    def _method(name: str | None) -> None:
        if name is None:
            os.environ.pop("ARLARENA_METHOD", None)
        else:
            os.environ["ARLARENA_METHOD"] = name

    def policy_loss(self, method: str | None, kwargs: dict, inputs: dict, norms: dict) -> tuple:
        self._method(method)
        log_probs = inputs["log_probs"].clone().requires_grad_()
        loss, clip_ratio, *_ = self.loss.PolicyLoss(**kwargs)(
            log_probs, inputs["old"], inputs["adv"], action_mask=inputs["mask"], **norms
        )
        loss.backward()
        return float(loss), log_probs.grad, float(clip_ratio)

    def advantages(self, method: str, args: Any, responses: list[dict], max_len: int) -> list:
        """Per sample: (action mask, advantages, info keys left) after OpenRLHF's plumbing."""
        self._method(method)
        samples = [
            self.samples.SamplesGenerator._process_response_into_experience(
                None, response, max_len=max_len)
            for response in responses
        ]
        maker = self.maker.RemoteExperienceMaker(
            None, None, None, None, self.kl.FixedKLController(0.0),
            type("Strategy", (), {"args": args})(), type("Tok", (), {"pad_token_id": 0})(),
        )
        batches = maker.split_rollout_samples(samples)
        for batch in batches:
            batch.action_log_probs = fake_log_probs(batch.index, batch.action_mask.shape[1])
        maker.compute_advantages_and_returns(batches)
        out = {}
        for batch in batches:
            for row, index in enumerate(batch.index):
                out[index] = (batch.action_mask[row], batch.advantages[row], sorted(batch.info))
        return [out[i] for i in range(len(responses))]


def fake_log_probs(index: list[int], width: int) -> torch.Tensor:
    """Deterministic log πold of sample ``index`` at action position ``t``."""
    rows = torch.tensor(index).unsqueeze(-1) * 31 + torch.arange(width)
    return -0.05 * (rows % 17 + 1).float()


@pytest.fixture(scope="module")
def worker():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"worker_process_setup_hook": SETUP_HOOK})
    try:
        yield OpenRLHFWorker.remote()
    finally:
        ray.shutdown()


def _args(method: str) -> Any:
    """OpenRLHF's parsed arguments of ``train.sh sokoban METHOD``."""
    return parse_train_args(openrlhf_args(Launch("sokoban", method)))


def _policy_loss_kwargs(args: Any) -> dict:
    """The arguments OpenRLHF's actor trainer builds its ``PolicyLoss`` with."""
    return {
        "clip_eps_low": args.actor.eps_clip_low_high[0],
        "clip_eps_high": args.actor.eps_clip_low_high[1],
        "dual_clip": args.actor.dual_clip,
        "token_level_loss": args.actor.loss_agg_mode == "token-mean",
        "policy_loss_type": args.actor.policy_loss_type,
        "is_correction_level": args.algo.advantage.is_correction_level,
    }


def _inputs(seed: int, drift: float, per_turn: bool = True) -> dict:
    """Two responses per row (two turns with env feedback between), with per-turn advantages
    or one advantage per row."""
    gen = torch.Generator().manual_seed(seed)
    batch, tokens = 6, 12
    old = -torch.rand(batch, tokens, generator=gen) * 3
    new = old + drift * torch.randn(batch, tokens, generator=gen)
    mask = torch.zeros(batch, tokens)
    adv = torch.zeros(batch, tokens)
    for row in range(batch):
        first = int(torch.randint(1, 5, (1,), generator=gen))
        second = int(torch.randint(0, 5, (1,), generator=gen))
        value = float(torch.randn(1, generator=gen))
        for start, end in [(0, first), (first + 2, first + 2 + second)]:
            mask[row, start:end] = 1
            adv[row, start:end] = float(torch.randn(1, generator=gen)) if per_turn else value
    return {"log_probs": new, "old": old, "adv": adv * mask, "mask": mask}


def _norms(inputs: dict) -> dict:
    """A data-parallel step of two ranks, each with another micro-batch like this one."""
    mask = inputs["mask"]
    return {"dp_size": 2, "batch_num_tokens": 4 * mask.sum(),
            "global_batch_size": 4 * (mask.sum(-1) > 0).sum().float()}


def test_the_setup_hook_patches_openrlhf_in_the_worker(worker):
    assert ray.get(worker.patched.remote()) == [True, True]


@pytest.mark.parametrize("method", ["GRPO", "GRPO_ST", "GSPO", "DAPO_GRPO", "GiGPO", "SAMPO"])
@pytest.mark.parametrize("seed", [0, 1])
def test_ppo_and_gspo_methods_equal_openrlhfs_own_loss(worker, method, seed):
    # GSPO: ours is the paper's token form (as verl), OpenRLHF's spreads the sequence gradient
    # evenly; they agree when a sequence has one advantage, so GSPO gets one per row.
    gspo = get_method(method).clipping == "gspo"
    inputs = _inputs(seed, drift=0.002 if gspo else 0.3, per_turn=not gspo)
    kwargs, norms = _policy_loss_kwargs(_args(method)), _norms(inputs)
    ours, ours_grad, ours_clip = ray.get(worker.policy_loss.remote(method, kwargs, inputs, norms))
    peer, peer_grad, peer_clip = ray.get(worker.policy_loss.remote(None, kwargs, inputs, norms))
    assert ours == pytest.approx(peer, rel=1e-5, abs=1e-7)
    assert torch.allclose(ours_grad, peer_grad, atol=1e-7)
    if get_method(method).clipping == "ppo_clip":
        assert ours_clip == pytest.approx(peer_clip, abs=1e-6)


def test_without_a_method_the_patched_loss_is_openrlhfs(worker):
    inputs = _inputs(3, drift=0.3)
    kwargs, norms = _policy_loss_kwargs(_args("DAPO_GRPO")), _norms(inputs)
    patched, patched_grad, _ = ray.get(worker.policy_loss.remote(None, kwargs, inputs, norms))
    log_probs = inputs["log_probs"].clone().requires_grad_()
    loss, *_ = PolicyLoss(**kwargs)(log_probs, inputs["old"], inputs["adv"],
                                    action_mask=inputs["mask"], **norms)
    loss.backward()
    assert patched == pytest.approx(float(loss.detach()), rel=1e-6)
    assert torch.allclose(patched_grad, log_probs.grad)


@pytest.mark.parametrize("method", ["CISPO", "SAPO", "GRPO_SM", "CISPO_SM", "SAPO_SM"])
def test_methods_openrlhf_lacks_follow_arlarena(worker, method):
    inputs = _inputs(1, drift=0.3)
    kwargs = _policy_loss_kwargs(_args(method))
    ours, ours_grad, _ = ray.get(worker.policy_loss.remote(method, kwargs, inputs, {}))
    log_probs = inputs["log_probs"].clone().requires_grad_()
    expected, metrics = method_policy_loss(get_method(method), log_probs, inputs["old"],
                                           inputs["adv"], inputs["mask"])
    expected.backward()
    assert ours == pytest.approx(float(expected.detach()), rel=1e-5)
    assert torch.allclose(ours_grad, log_probs.grad, atol=1e-7)
    if get_method(method).sequence_mask:
        assert metrics["actor/seqs_masked"] > 0
    # With the step's global normalisers the micro-batch weighs its share of the step.
    norms = _norms(inputs)
    scaled, *_ = ray.get(worker.policy_loss.remote(method, kwargs, inputs, norms))
    assert scaled == pytest.approx(ours * 2 / 4, rel=1e-5)  # dp_size / (4 such micro-batches)
    openrlhf, *_ = ray.get(worker.policy_loss.remote(None, kwargs, inputs, {}))
    assert abs(ours - openrlhf) > 1e-3


@pytest.fixture(scope="module")
def episodes():
    """2 Sokoban tasks × 4 agent episodes (expert, random, malformed), as OpenRLHF's executor
    returns them and as played straight on the env."""
    mp = pytest.MonkeyPatch()
    mp.setenv("ARLARENA_ENV", "sokoban")
    mp.setenv("ARLARENA_MAX_TURNS", "4")
    mp.setenv("ARLARENA_METHOD", "GiGPO")
    try:
        settings, executor, tokenizer = AgentSettings.from_environ(), AgentExecutor(), None
        tokenizer = smollm2_tokenizer()
        refs, responses = [], []
        for task in (Task(0), Task(6)):
            for k in range(GROUP):
                agent = make_agent("expert") if k == 0 else make_agent("random", seed=k)
                ref = play(settings, task, agent, malformed_first=k == 3)
                refs.append(ref)
                responses.append(asyncio.run(run_executor(executor, tokenizer, task,
                                                          ref.responses, 8192)))
    finally:
        mp.undo()
    return refs, responses


@pytest.mark.parametrize("method", ["GRPO", "GiGPO", "EMPG"])
def test_advantages_are_the_methods_per_turn(worker, episodes, method):
    refs, responses = episodes
    args = _args(method)
    args.rollout.n_samples_per_prompt = GROUP
    rows = ray.get(worker.advantages.remote(method, args, responses, args.data.max_len))

    columns: dict[str, list] = {k: [] for k in ("episode_scores", "group_ids", "traj_ids",
                                                "steps", "step_rewards", "anchors", "entropies")}
    spans = []
    for index, (ref, response) in enumerate(zip(refs, responses, strict=True)):
        log_probs = fake_log_probs([index], max(end for _, end in response["action_ranges"]))[0]
        for step, (start, end) in enumerate(response["action_ranges"]):
            # the action mask drops the first token: token t is action position t - 1
            span = (start - 1, end - 1)
            for key, value in zip(columns, (
                sum(ref.rewards), index // GROUP, index, step, ref.rewards[step],
                ref.anchors[step], float(-log_probs[span[0]:span[1]].mean()),
            ), strict=True):
                columns[key].append(value)
            spans.append((index, span))
    expected = compute_advantages(get_method(method), **columns)
    assert expected.abs().sum() > 0

    seen = [torch.zeros_like(mask) for mask, _, _ in rows]
    for value, (index, (start, end)) in zip(expected.tolist(), spans, strict=True):
        mask, advantages, info_keys = rows[index]
        assert mask[start:end].all()
        assert torch.allclose(advantages[start:end], torch.tensor(value), atol=1e-6)
        seen[index][start:end] = 1
        assert not any(key.startswith("arlarena/") for key in info_keys)
    for (mask, advantages, _), covered in zip(rows, seen, strict=True):
        assert torch.equal(mask.bool(), covered.bool())  # every response token, nothing else
        assert advantages[~mask.bool()].abs().sum() == 0
