"""The OpenAI-compatible agent against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import time

import pytest

from arlarena_baselines.cli import main
from arlarena_baselines.evaluation import read_records
from tests.chat_server import ChatServer, always
from wrappers.agents import AgentError, AgentRequest, make_agent

UP = "<think>Going up.</think><action>up</action>"


def _agent(server: ChatServer, **kwargs):
    options = {"model": "test-model", "base_url": server.base_url, "api_key": "k",
               "backoff": 0.01, **kwargs}
    return make_agent("openai", **options)


def test_answers_a_batch_in_order_and_counts_usage():
    with ChatServer(lambda messages: f"echo:{messages[0]['content']}") as server:
        agent = _agent(server, concurrency=4)
        prompts = [f"prompt {i}" for i in range(10)]
        assert agent.act([AgentRequest(p) for p in prompts]) == [f"echo:{p}" for p in prompts]
        usage = agent.usage()
        assert usage["requests"] == 10 and usage["completion_tokens"] == 20
        assert agent.usage()["requests"] == 0
        assert {r["model"] for r in server.requests} == {"test-model"}
        assert server.requests[0]["temperature"] == 0.6


def test_retries_429_then_succeeds():
    with ChatServer(always(UP), fail_first=2, status=429) as server:
        agent = _agent(server, max_retries=3)
        assert agent.act([AgentRequest("p")]) == [UP]
        assert len(server.requests) == 3


def test_retries_5xx_and_gives_up_with_a_clear_error():
    with ChatServer(always(UP), fail_first=100, status=503) as server:
        agent = _agent(server, max_retries=2)
        with pytest.raises(AgentError, match="failed 3 times"):
            agent.act([AgentRequest("p")])
        assert len(server.requests) == 3


def test_client_errors_are_not_retried():
    with ChatServer(always(UP), fail_first=100, status=400) as server:
        with pytest.raises(AgentError, match="refused"):
            _agent(server, max_retries=5).act([AgentRequest("p")])
        assert len(server.requests) == 1


def test_a_hanging_server_times_out():
    with ChatServer(always(UP), hang_after=0) as server:
        agent = _agent(server, timeout=0.5, max_retries=1)
        start = time.monotonic()
        with pytest.raises(AgentError, match="Timeout"):
            agent.act([AgentRequest("p")])
        assert time.monotonic() - start < 10


def test_a_dead_endpoint_is_a_clear_error():
    agent = make_agent("openai", model="m", base_url="http://127.0.0.1:9/v1", max_retries=1,
                       backoff=0.01, timeout=2)
    with pytest.raises(AgentError, match=r"127\.0\.0\.1:9"):
        agent.act([AgentRequest("p")])


def test_model_is_required(monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with pytest.raises(ValueError, match="model"):
        make_agent("openai")


def test_eval_keeps_results_when_the_server_hangs_and_resumes(tmp_path, capsys):
    args = ["eval", "--env", "sokoban", "--agent", "openai", "--model", "test-model",
            "--episodes", "4", "--batch-size", "1", "--out", str(tmp_path), "--no-progress"]
    # Always "up": each episode runs the 15-turn limit unless "up" happens to solve it.
    with ChatServer(always(UP), hang_after=33) as server:
        status = main([*args, "--base-url", server.base_url, "--timeout", "0.5",
                       "--max-retries", "0"])
    assert status == 1
    assert "--resume" in capsys.readouterr().err
    (path,) = tmp_path.glob("*.jsonl")
    first = [r for r in read_records(path) if r["type"] == "episode"]
    assert 1 <= len(first) < 4
    with ChatServer(always(UP)) as server:
        assert main([*args, "--base-url", server.base_url, "--resume"]) == 0
    records = list(read_records(path))
    episodes = [r["episode_id"] for r in records if r["type"] == "episode"]
    assert sorted(episodes) == sorted(set(episodes)) and len(episodes) == 4
    for episode in episodes:
        steps = [r["step"] for r in records if r["type"] == "turn" and r["episode_id"] == episode]
        assert steps == list(range(len(steps)))
    assert all(r["format_ok"] for r in records if r["type"] == "turn")
