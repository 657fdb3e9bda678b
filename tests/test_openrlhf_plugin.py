"""The plug-in in a real Ray worker: OpenRLHF's own classes, patched by the setup hook.

Ray starts with ``worker_process_setup_hook=arlarena_baselines.openrlhf.plugin.install``; a
worker then imports OpenRLHF's ``openrlhf.models.loss`` and ``experience_maker`` (DeepSpeed,
PEFT and Ray are real; flash-attn and vLLM, GPU-only, are stubbed at import time by
``tests/openrlhf_cpu.py``) and computes:

- the loss of a ``PolicyLoss`` built from the flags ``train.sh`` passes (parsed by OpenRLHF's
  own parser): for PPO-clip and GSPO methods it equals OpenRLHF's own loss (value and gradient,
  with the global normalisers of a data-parallel step); for CISPO, SAPO and the
  sequence-masked methods it equals the formulas of ``docs/algorithms.md`` (the numpy oracle
  ``tests/loss_oracle.py``) and differs from OpenRLHF's;
- the advantages of ``RemoteExperienceMaker`` on experiences made by OpenRLHF's own
  ``_process_response_into_experience`` from agent episodes: each turn's tokens carry the
  advantage ``arlarena_baselines.algos`` gives that turn when the same episodes are played
  straight on the env.

Without ``ARLARENA_METHOD`` the patched loss is OpenRLHF's: it equals an unpatched
``PolicyLoss`` in this process.

A step's samples (:mod:`arlarena_baselines.openrlhf.sampling`) are drawn here through
OpenRLHF's own ``SamplesGenerator`` (its ``_generate_vllm`` and
``_process_response_into_experience``, on real Ray object refs), the vLLM engines replaced by
a stand-in that answers each prompt with scripted episode returns: the library's filter rule
with cold start, round limit and top-up, the step budget, and the evaluation's sampling and
metrics.
"""

from __future__ import annotations

import asyncio
import os
from types import SimpleNamespace
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
    from openrlhf.trainer import ppo_trainer
    from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator

import wrappers.agents  # noqa: E402, F401  (registers the scripted agents)
from arlarena_baselines.algos import (  # noqa: E402
    compute_advantages,
    get_method,
    study_method,
)
from arlarena_baselines.algos import metric_names as mn  # noqa: E402
from arlarena_baselines.openrlhf import sampling, turn_logs  # noqa: E402
from arlarena_baselines.openrlhf.agent import AgentExecutor  # noqa: E402
from arlarena_baselines.openrlhf.cli import parse_train_args  # noqa: E402
from arlarena_baselines.openrlhf.launch import (  # noqa: E402
    SETUP_HOOK,
    Launch,
    openrlhf_args,
    runtime_env,
)
from arlarena_baselines.openrlhf.settings import (  # noqa: E402
    AgentSettings,
    RunSettings,
    Task,
    task_from_label,
)
from arlarena_baselines.trainer.models import smollm2_tokenizer  # noqa: E402
from tests.loss_oracle import expected_loss  # noqa: E402
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
            from openrlhf.trainer import ppo_trainer  # noqa: F401  (patched on import)
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
    assert ray.get(worker.patched.remote()) == [True] * 6


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
    want = expected_loss(get_method(method), inputs["log_probs"], inputs["old"], inputs["adv"],
                         inputs["mask"])
    assert ours == pytest.approx(want.loss, rel=1e-5)
    assert torch.allclose(ours_grad.double(), torch.from_numpy(want.grad), atol=1e-7)
    assert (want.seqs_masked > 0) == get_method(method).sequence_mask
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


# -- A step's samples (sampling.py) in OpenRLHF's own SamplesGenerator, in this process --
N = 2  # episodes per task in the sampling tests


def episode(label: str, sample: int, reward: float, score: float | None = None) -> dict:
    """One episode as OpenRLHF's agent executor returns it."""
    return {"prompt": f"task {label}", "label": label, "images": None, "mm_train_inputs": None,
            "reward": reward, "scores": reward if score is None else score,
            "observation_tokens": [5, 6, 7, 8, 9],
            "action_ranges": [(2, 4)], "rollout_log_probs": None, "truncated": False,
            "extra_logs": {turn_logs.SUCCESS: float(reward == 1.0), "sample": float(sample)}}


def generator(method: str, tasks: list[tuple[float, ...]], env: str = "sokoban") -> tuple:
    """OpenRLHF's generator over ``tasks`` (each: its episodes' returns), N episodes each."""
    args = parse_train_args(openrlhf_args(Launch(env, method)))
    args.rollout.batch_size, args.rollout.n_samples_per_prompt = 4, N
    labels = [Task(seed).label() for seed in range(len(tasks))]
    loader = [(["sokoban"], [f"task {label}"], [label], [None]) for label in labels]
    gen = SamplesGenerator(SimpleNamespace(args=args), loader, None, None, [])
    returns = dict(zip(labels, tasks, strict=True))
    gen._dispatch_prompts_to_vllm = lambda prompts, labels, images=None, **kw: [
        ray.put([episode(label, k, returns[label][k]) for k in range(N)]) for label in labels
    ]
    return gen, args


def seeds(samples: list) -> list[int]:
    return [task_from_label(s.labels[0]).seed for s in samples]


# Four tasks a round; (1, 0) differs, (1, 1) and (0, 0) are all-equal groups.
ROUND_1 = [(1, 0), (1, 1), (0, 0), (0.5, 1)]  # tasks 0-3: 2 pass
ROUND_2 = [(1, 1), (0, 0), (0, 0), (1, 1)]  # tasks 4-7: none
ROUND_3 = [(0, 0), (0, 1), (1, 1), (1, 1)]  # tasks 8-11: 1 passes, 1 tops up


def test_a_filtered_step_is_the_librarys_rule_topped_up_to_the_batch(worker):
    gen, _ = generator("DAPO_GRPO", ROUND_1 + ROUND_2 + ROUND_3)
    sampling.resume_step(gen, 15)  # past DAPO_GRPO's 15 cold-start steps on ALFWorld's column
    kept, pass_rate, consumed, done = sampling.step_samples(
        gen, get_method("DAPO_GRPO"), RunSettings(steps=100))
    # Tasks 0 and 3, then task 9, then one all-equal group of the last round (the first to
    # come back: OpenRLHF keeps episodes in the order they finish).
    tasks = set(seeds(kept))
    assert len(tasks) == 4 and {0, 3, 9} < tasks and (tasks - {0, 3, 9}) < {8, 10, 11}
    assert len(kept) == 4 * N
    for start in range(0, len(kept), N):  # whole groups, N consecutive samples each
        assert len({s.labels[0] for s in kept[start:start + N]}) == 1
    assert consumed == 12 and not done
    assert pass_rate == pytest.approx(100 * 3 / 12)
    info = kept[0].info
    assert float(info[mn.ROUNDS][0]) == 3 and float(info[mn.KEPT_GROUPS][0]) == 4
    assert float(info[mn.GROUPS_FILTERED][0]) == 8 and float(info[mn.GROUPS_TOPPED_UP][0]) == 1


def test_returns_not_scores_decide(worker):
    # WebShop-like: equal fractional scores of 0.5 (OpenRLHF's (0, 1) range would keep them),
    # and a group that always succeeds with different returns (OpenRLHF would drop it).
    gen, _ = generator("DAPO_GRPO", [(0.5, 0.5), (1.0, 0.9), (0.5, 0.5), (0.2, 0.2)])
    method = study_method("DAPO_GRPO", "webshop").with_overrides(max_num_gen_batches=2,
                                                                 top_up=False)
    kept, *_ = sampling.step_samples(gen, method, RunSettings())
    assert sorted(set(seeds(kept))) == [1]


def test_cold_start_and_plain_methods_keep_one_round(worker):
    for method, step in (("DAPO_GRPO", 0), ("GRPO", 40)):
        gen, _ = generator(method, ROUND_1 + ROUND_2)
        sampling.resume_step(gen, step)
        kept, pass_rate, consumed, _ = sampling.step_samples(gen, get_method(method),
                                                             RunSettings())
        assert sorted(seeds(kept)) == [s for s in range(4) for _ in range(N)]
        assert consumed == 4 and pass_rate is None


def test_the_run_stops_after_the_configured_steps(worker):
    gen, _ = generator("GRPO", [(1, 0)] * 40)
    settings, trained = RunSettings(steps=3), 0
    while True:  # OpenRLHF's fit loop: train on what comes, stop when exhausted
        kept, _, _, exhausted = sampling.step_samples(gen, get_method("GRPO"), settings)
        trained += bool(kept)
        if exhausted:
            break
    assert trained == 3
    resumed, _ = generator("GRPO", [(1, 0)] * 40)
    sampling.resume_step(resumed, 3)  # a relaunch after the last checkpoint: nothing left
    assert sampling.step_samples(resumed, get_method("GRPO"), settings) == ([], None, 0, True)
    short, _ = generator("GRPO", [(1, 0)] * 6)  # the dataset runs out first
    assert sampling.step_samples(short, get_method("GRPO"), RunSettings(steps=9))[3] is False
    assert sampling.step_samples(short, get_method("GRPO"), RunSettings(steps=9))[3] is True


@pytest.mark.parametrize(("env", "top_p", "top_k"), [("sokoban", 1.0, 0), ("alfworld", 0.95, 20)])
def test_evaluation_samples_like_the_study(env, top_p, top_k):
    """The launch hands the env's study evaluation sampling to OpenRLHF's evaluation."""
    settings = RunSettings.from_environ(runtime_env(Launch(env, "GRPO"))["env_vars"])
    kwargs = sampling.eval_sampling({"temperature": 0.6, "top_p": 0.5, "top_k": 7,
                                     "max_len": 8192}, settings)
    assert kwargs == {"temperature": 0.6, "top_p": top_p, "top_k": top_k, "max_len": 8192}


def test_evaluation_logs_success_and_score():
    episodes = [(1.0, 1.0), (0.0, 0.25), (-0.1, 0.0), (0.9, 0.9)]  # (return, score)
    samples = [SamplesGenerator._process_response_into_experience(None, episode(
        Task(t).label(), 0, r, s)) for t, (r, s) in enumerate(episodes)]
    loader = [(["sokoban"], [s.prompts[0]], [s.labels[0]], [None]) for s in samples]
    logs = sampling.eval_metrics(ppo_trainer.compute_eval_metrics(loader, samples, 1), samples)
    assert logs["eval_sokoban_pass1"] == pytest.approx(0.45)  # OpenRLHF's: the mean return
    assert logs[sampling.EVAL_SUCCESS] == 0.25
    assert logs[sampling.EVAL_SCORE] == pytest.approx(0.5375)
    assert logs[sampling.EVAL_RETURN] == pytest.approx(0.45)
    assert (sampling.EVAL_SUCCESS, sampling.EVAL_SCORE) == ("success_rate", "score")
    assert sampling.eval_metrics({"x": 1}, []) == {"x": 1}
