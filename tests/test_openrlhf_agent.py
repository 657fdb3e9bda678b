"""The ARLArena agent in OpenRLHF's own multi-turn protocol.

Each registered env plays one scripted episode (a malformed turn where the env checks the
format, then the env's expert or a scripted agent) through the agent file as OpenRLHF 0.11.2
loads it (``_load_agent_executor``) and its own ``MultiTurnAgentExecutor`` loop, with a stand-in
for the vLLM engine; the result must be the episode played straight on the env. vLLM and
flash-attn are GPU-only: their import-time modules are stubbed (``tests/openrlhf_cpu.py``).
"""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("ray")
pytest.importorskip("openrlhf.utils.agent")

from tests.openrlhf_cpu import gpu_only_stubs

with gpu_only_stubs():
    from openrlhf.trainer.ray.vllm_engine import _load_agent_executor
from openrlhf.utils.agent import MultiTurnAgentExecutor

import wrappers.agents  # noqa: F401  (registers the scripted agents)
from arlarena_baselines.openrlhf import turn_logs
from arlarena_baselines.openrlhf.launch import AGENT_FILE
from arlarena_baselines.openrlhf.settings import AgentSettings, Task
from arlarena_baselines.trainer.models import smollm2_tokenizer
from tests.openrlhf_scripted import play, run_executor
from wrappers.agents.base import make_agent

OOD = "eval_out_of_distribution"

# env name -> (ARLARENA_* settings, task, agent, malformed first turn)
CASES = {
    "sokoban": ({"ARLARENA_ENV": "sokoban"}, Task(0), "expert", True),
    "webshop-small": ({"ARLARENA_ENV": "ARLArena/WebShop-Small-v0"},
                      Task(3, {"split": "eval", "index": 3}), "expert", True),
    "math": ({"ARLARENA_ENV": "math", "ARLARENA_ENV_KWARGS": '{"dataset": "arithmetic"}'},
             Task(5), "math-coder", False),
    "alfworld": ({"ARLARENA_ENV": "alfworld"}, Task(0, {"split": OOD, "index": 6}), "expert",
                 True),
    "bandit": ({"ARLARENA_ENV": "ARLArena/Bandit-v0"}, Task(5), "expert", False),
}


@pytest.fixture(scope="module")
def tokenizer():
    return smollm2_tokenizer()


@pytest.fixture
def environ(monkeypatch, tmp_path):
    def set_all(values: dict[str, str]) -> AgentSettings:
        for key, value in values.items():
            monkeypatch.setenv(key, value)
        if values.get("ARLARENA_ENV") == "alfworld":
            monkeypatch.setenv("ARLARENA_ENV_KWARGS", json.dumps({"cache_dir": str(tmp_path)}))
        return AgentSettings.from_environ()

    return set_all


@pytest.mark.parametrize("name", CASES)
def test_openrlhf_plays_the_episode_the_env_plays(name, environ, tokenizer):
    values, task, agent, malformed = CASES[name]
    settings = environ({**values, "ARLARENA_METHOD": "GiGPO"})
    executor = _load_agent_executor(str(AGENT_FILE))
    assert isinstance(executor, MultiTurnAgentExecutor)

    ref = play(settings, task, make_agent(agent), malformed_first=malformed)
    out = asyncio.run(run_executor(executor, tokenizer, task, ref.responses))

    assert ref.info["won"] and len(ref.responses) >= (2 if malformed else 1)
    assert out["reward"] == pytest.approx(sum(ref.rewards))
    assert float(out["scores"]) == pytest.approx(ref.score)
    assert len(out["action_ranges"]) == len(ref.responses)
    logs = out["extra_logs"]
    assert logs[turn_logs.TURN_REWARDS] == pytest.approx(ref.rewards)
    assert logs[turn_logs.TURN_ANCHORS] == [turn_logs.anchor_id(a) for a in ref.anchors]
    assert logs[turn_logs.TURNS] == len(ref.responses)
    assert logs[turn_logs.SUCCESS] == 1.0
    assert logs[turn_logs.VALID_RATIO] == pytest.approx(sum(ref.valid) / len(ref.valid))
    assert (logs[turn_logs.VALID_RATIO] < 1.0) == malformed

    # The token sequence is the conversation in the model's chat template, and each action
    # range holds exactly one response and its end-of-turn token.
    tokens = out["observation_tokens"]
    turns = [(role, text) for p, r in zip(ref.prompts, ref.responses, strict=True)
             for role, text in (("user", p), ("assistant", r))]
    conversation = [{"role": role, "content": text} for role, text in turns]
    rendered = tokenizer.apply_chat_template(conversation, tokenize=False)
    assert tokenizer.decode(tokens) == rendered.removesuffix("\n")
    for (start, end), response in zip(out["action_ranges"], ref.responses, strict=True):
        assert tokenizer.decode(tokens[start:end]) == response + tokenizer.eos_token


def test_turn_limit_and_logs_without_a_method(environ, tokenizer):
    settings = environ({"ARLARENA_ENV": "sokoban", "ARLARENA_MAX_TURNS": "2"})
    executor = _load_agent_executor(str(AGENT_FILE))
    ref = play(settings, Task(0), make_agent("random", seed=1), random_turns=["up", "up"])
    out = asyncio.run(run_executor(executor, tokenizer, Task(0), ref.responses))
    assert len(ref.responses) == len(out["action_ranges"]) == 2
    assert out["reward"] == pytest.approx(sum(ref.rewards))
    # No ARLARENA_METHOD: only the scalar logs OpenRLHF averages, no per-turn columns.
    assert set(out["extra_logs"]) == {turn_logs.SUCCESS, turn_logs.VALID_RATIO, turn_logs.TURNS}


def test_a_bad_task_label_is_refused(environ, tokenizer):
    environ({"ARLARENA_ENV": "sokoban"})
    executor = _load_agent_executor(str(AGENT_FILE))
    with pytest.raises(ValueError, match="task label"):
        asyncio.run(executor.execute("p", "not a task", None, 4096, tokenizer, None))
