"""The OpenAI-compatible agent against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

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
        (spent,) = agent.spending()
        assert spent["answered"] == spent["attempts"] == 10 and spent["completion_tokens"] == 20
        assert agent.spending()[0]["attempts"] == 0  # reset on read
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
        with pytest.raises(AgentError, match="Timeout"):
            agent.act([AgentRequest("p")])
        (spent,) = agent.spending()
        assert len(server.requests) == spent["attempts"] == 2
        assert spent["failures"] == {"timeout": 2} and spent["answered"] == 0


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
        server.hang_after = None  # the same endpoint is back
        assert main([*args, "--base-url", server.base_url, "--resume"]) == 0
    records = list(read_records(path))
    episodes = [r["episode_id"] for r in records if r["type"] == "episode"]
    assert sorted(episodes) == sorted(set(episodes)) and len(episodes) == 4
    for episode in episodes:
        steps = [r["step"] for r in records if r["type"] == "turn" and r["episode_id"] == episode]
        assert steps == list(range(len(steps)))
    assert all(r["format_ok"] for r in records if r["type"] == "turn")


# ---------------------------------------------------------------- errors per episode
def _eval(server: ChatServer, out, *extra: str) -> int:
    return main(["eval", "--env", "sokoban", "--agent", "openai", "--model", "test-model",
                 "--base-url", server.base_url, "--out", str(out), "--no-progress",
                 "--max-retries", "1", *extra])


@pytest.mark.parametrize("failure", [
    {"broken": "malformed"}, {"broken": "empty_choices"}, {"fail_first": 10**9, "status": 500},
])
def test_a_broken_server_ends_each_episode_with_an_error_not_the_run(tmp_path, capsys, failure):
    with ChatServer(always(UP), **failure) as server:
        agent = _agent(server, max_retries=1)
        (reply,) = agent.respond([AgentRequest("p")])
        assert reply.text == "" and "failed 2 times" in reply.error
        status = _eval(server, tmp_path, "--episodes", "3", "--batch-size", "2")
    out, err = capsys.readouterr()
    assert status == 1 and "3 episode(s) of openai:test-model ended with an error" in err
    (path,) = tmp_path.glob("*.jsonl")
    episodes = [r for r in read_records(path) if r["type"] == "episode"]
    assert len(episodes) == 3 and all(e["error"] and not e["won"] for e in episodes)
    assert not [r for r in read_records(path) if r["type"] == "turn"]
    assert "| openai:test-model | ARLArena/Sokoban-v0 | all | 3 | 0.0% |" in out
    assert out.split("\n")[2].split("|")[9].strip() == "3"  # the errors column
    # Two attempts (1 retry) per episode, three episodes, plus the direct respond() above.
    assert len(server.requests) == 2 + 3 * 2


def test_resume_retries_the_episodes_that_ended_with_an_error(tmp_path, capsys):
    with ChatServer(always(UP), broken="empty_choices") as server:
        assert _eval(server, tmp_path, "--episodes", "2") == 1
        server.broken = None
        assert _eval(server, tmp_path, "--episodes", "2", "--resume") == 0
    (path,) = tmp_path.glob("*.jsonl")
    episodes = [r for r in read_records(path) if r["type"] == "episode"]
    assert sorted(e["episode_id"] for e in episodes) == ["seed=0/sample=0", "seed=1/sample=0"]
    assert all(e["error"] is None and e["turns"] > 0 for e in episodes)


# ---------------------------------------------------------------- usage, cost, cache, budget
def test_usage_and_cost_are_counted_per_episode(tmp_path, capsys):
    prices = '{"test-model": {"prompt": 2.0, "completion": 10.0}}'
    with ChatServer(always(UP)) as server:
        assert _eval(server, tmp_path, "--episodes", "2", "--prices", prices) == 0
    records = list(read_records(next(tmp_path.glob("*.jsonl"))))
    for episode in (r for r in records if r["type"] == "episode"):
        turns = [r for r in records if r["type"] == "turn"
                 and r["episode_id"] == episode["episode_id"]]
        usage = episode["usage"]
        assert usage["requests"] == len(turns) == episode["turns"]
        assert usage["completion_tokens"] == 2 * len(turns)  # UP is two words
        assert usage["prompt_tokens"] == sum(t["usage"]["prompt_tokens"] for t in turns) > 0
        expected = (usage["prompt_tokens"] * 2.0 + usage["completion_tokens"] * 10.0) / 1e6
        assert usage["cost"] == pytest.approx(expected)
    out, err = capsys.readouterr()
    assert "tokens/ep" in out and "cost $" in out
    assert "answered by the server, 0 from the cache" in err and "cost $0.0" in err


def test_cache_makes_a_rerun_free_and_keeps_samples_apart(tmp_path):
    counter = iter(range(10**6))

    def fresh(messages):  # a new answer on every call, like sampling at T > 0
        return f"<think>sample {next(counter)}</think><action>up</action>"

    args = ["--episodes", "2", "--samples", "2", "--temperature", "0.8",
            "--cache-dir", str(tmp_path / "cache")]
    with ChatServer(fresh) as server:
        assert _eval(server, tmp_path / "a", *args) == 0
        sent = len(server.requests)
        assert _eval(server, tmp_path / "b", *args) == 0
        assert len(server.requests) == sent  # the rerun made no request at all
    (a,), (b,) = (tmp_path / "a").glob("*.jsonl"), (tmp_path / "b").glob("*.jsonl")
    played = lambda path: [r for r in read_records(path) if r["type"] != "spend"]  # noqa: E731
    assert played(a) == played(b)
    first = {(r["seed"], r["sample"]): r["response"] for r in read_records(a)
             if r["type"] == "turn" and r["step"] == 0}
    assert first[(0, 0)] != first[(0, 1)] and first[(1, 0)] != first[(1, 1)]


def test_greedy_samples_share_the_cache_and_sampled_ones_do_not(tmp_path):
    with ChatServer(always(UP)) as server:
        greedy = _agent(server, temperature=0.0, cache=tmp_path / "g")
        greedy.act([AgentRequest("p", sample=0)])
        greedy.act([AgentRequest("p", sample=1)])
        assert len(server.requests) == 1 and greedy.spending()[0]["cache_hits"] == 1
        sampled = _agent(server, temperature=0.7, cache=tmp_path / "s", seed=3)
        sampled.act([AgentRequest("p", sample=0)])
        sampled.act([AgentRequest("p", sample=1)])
        sampled.act([AgentRequest("p", sample=1)])
        assert len(server.requests) == 3
        seeds = [r["seed"] for r in server.requests[1:]]
        assert seeds[0] != seeds[1]  # per-request seeds differ between samples
        for agent in (greedy, sampled):
            agent.close()


def test_the_request_budget_stops_the_run_cleanly(tmp_path, capsys):
    args = ["--episodes", "4", "--batch-size", "1", "--cache-dir", str(tmp_path / "cache")]
    with ChatServer(always(UP)) as server:
        assert _eval(server, tmp_path, *args, "--max-requests", "20") == 3
        assert len(server.requests) == 20
        err = capsys.readouterr().err
        assert "the request budget of 20 is spent" in err and "--resume" in err
        (path,) = tmp_path.glob("*.jsonl")
        kept = [r for r in read_records(path) if r["type"] == "episode"]
        assert 1 <= len(kept) < 4  # 15 turns per episode unless "up" solves it
        assert _eval(server, tmp_path, *args, "--resume") == 0
    records = list(read_records(path))
    ids = [r["episode_id"] for r in records if r["type"] == "episode"]
    assert len(ids) == len(set(ids)) == 4
    turns = sum(1 for r in records if r["type"] == "turn")
    # The cache answered the turns of the episode the budget interrupted.
    assert len(server.requests) == turns


# ---------------------------------------------------------------- the cache, keys, replies
def _fresh():
    counter = iter(range(10**6))
    return lambda messages: f"<think>sample {next(counter)}</think><action>up</action>"


def test_above_t0_a_prompt_repeated_in_another_episode_or_turn_is_sampled_afresh(tmp_path):
    same = [AgentRequest("p", episode_id="seed=0/sample=0"),
            AgentRequest("p", episode_id="seed=7/sample=0"),  # another task, the same prompt
            AgentRequest("p", episode_id="seed=0/sample=0", turn=1)]
    with ChatServer(_fresh()) as server:
        sampled = _agent(server, temperature=0.7, cache=tmp_path / "s")
        first = sampled.act(same)
        assert len(server.requests) == 3 and len(set(first)) == 3
        assert sampled.act(same) == first and len(server.requests) == 3  # a resume: all cached
        greedy = _agent(server, temperature=0.0, cache=tmp_path / "g")
        assert len({greedy.act([r])[0] for r in same}) == 1 and len(server.requests) == 4
        assert greedy.spending()[0]["cache_hits"] == 2  # reuse at T = 0 is counted
        for agent in (sampled, greedy):
            agent.close()


def test_a_key_in_the_base_url_is_written_nowhere(tmp_path, capsys):
    secrets = ("sk-userinfo-secret", "sk-query-secret")
    with ChatServer(always(UP), fail_first=10**9, status=500) as server:
        port = server.base_url.split(":")[2].split("/")[0]
        url = f"http://me:{secrets[0]}@127.0.0.1:{port}/v1?api_key={secrets[1]}"
        assert main(["eval", "--env", "sokoban", "--agent", "openai", "--model", "test-model",
                     "--base-url", url, "--out", str(tmp_path / "a"), "--no-progress",
                     "--max-retries", "0", "--episodes", "1"]) == 1
    dead = f"http://me:{secrets[0]}@127.0.0.1:9/v1?api_key={secrets[1]}"
    assert main(["eval", "--env", "sokoban", "--agent", "openai", "--model", "test-model",
                 "--base-url", dead, "--out", str(tmp_path / "b"), "--no-progress",
                 "--max-retries", "0", "--episodes", "1", "--timeout", "2"]) == 1
    out, err = capsys.readouterr()
    written = "".join(p.read_text() for p in tmp_path.rglob("*.jsonl")) + out + err
    assert "failed 1 times" in written and "127.0.0.1:9" in err
    assert not [secret for secret in secrets if secret in written]


def test_a_reply_without_usage_is_counted_and_said_not_priced_as_free(tmp_path, capsys):
    def no_usage(body, answer):
        del answer["usage"]

    prices = '{"test-model": {"prompt": 2.0, "completion": 10.0}}'
    with ChatServer(always(UP), edit=no_usage) as server:
        assert _eval(server, tmp_path, "--episodes", "1", "--prices", prices, "--env-kwargs",
                     '{"max_episode_steps": 2}') == 0
    err = capsys.readouterr().err
    (path,) = tmp_path.glob("*.jsonl")
    turns = [r for r in read_records(path) if r["type"] == "turn"]
    assert turns and all(t["usage"]["no_usage"] == 1 and "cost" not in t["usage"] for t in turns)
    assert f"{len(turns)} answered without token counts" in err
    assert main(["report", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "| partial |" in out and "came without token counts" in err


@pytest.mark.parametrize("server_options", [
    {"faults": ["not_utf8"]},
    {"fail_first": 1, "status": 429, "retry_after": "-5"},
    {"fail_first": 1, "status": 429, "retry_after": "NaN"},
    {"edit": lambda body, answer: answer["usage"].update(prompt_tokens="many")},
], ids=["not-utf8", "retry-after-negative", "retry-after-nan", "usage-not-a-number"])
def test_a_malformed_reply_is_retried_or_recorded_never_a_usage_error(tmp_path, server_options):
    with ChatServer(always(UP), **server_options) as server:
        assert _eval(server, tmp_path, "--episodes", "1", "--env-kwargs",
                     '{"max_episode_steps": 2}') == 0
    (path,) = tmp_path.glob("*.jsonl")
    (episode,) = [r for r in read_records(path) if r["type"] == "episode"]
    assert episode["error"] is None and episode["turns"] >= 1


def test_what_the_server_says_of_a_reply_is_kept(tmp_path, capsys):
    def edit(body, answer):
        message = answer["choices"][0]["message"]
        message["content"] = [{"type": "text", "text": "<action>"},
                              {"type": "text", "text": "up</action>"}]
        message["reasoning_content"] = "The box is above me."
        answer["choices"][0]["finish_reason"] = "length"
        answer["model"] = "test-model-2026-01-01"
        answer["system_fingerprint"] = "fp_abc"

    with ChatServer(always(UP), edit=edit) as server:
        assert _eval(server, tmp_path, "--episodes", "1", "--env-kwargs",
                     '{"max_episode_steps": 2}') == 0
    out = capsys.readouterr().out
    (path,) = tmp_path.glob("*.jsonl")
    records = list(read_records(path))
    turns = [r for r in records if r["type"] == "turn"]
    (episode,) = [r for r in records if r["type"] == "episode"]
    for turn in turns:  # the reasoning is the think block, so the format check passes
        assert turn["response"] == "<think>The box is above me.</think><action>up</action>"
        assert turn["format_ok"] is True
        assert (turn["finish_reason"], turn["served_model"], turn["system_fingerprint"]) == (
            "length", "test-model-2026-01-01", "fp_abc")
    assert episode["finish_reasons"] == {"length": len(turns)}
    assert f"| length {len(turns)} |" in out  # the table's cut replies column


def test_models_that_take_max_completion_tokens_get_it():
    message = ("Unsupported parameter: 'max_tokens' is not supported with this model. Use "
               "'max_completion_tokens' instead.")
    refuse = lambda body: (400, message) if "max_tokens" in body else None  # noqa: E731
    models = {"gpt-5-mini": always(UP), "my-reasoner": always(UP)}
    with ChatServer(models=models, refuse=refuse) as server:
        gpt5 = _agent(server, model="gpt-5-mini", max_tokens=77)
        assert gpt5.act([AgentRequest("p")]) == [UP]
        assert server.requests[-1]["max_completion_tokens"] == 77 and len(server.requests) == 1
        other = _agent(server, model="my-reasoner", max_tokens=77, max_retries=0)
        assert other.act([AgentRequest("p")]) == [UP]  # the 400 that names it switches
        assert other.act([AgentRequest("q")]) == [UP]
        assert ["max_tokens" in r for r in server.requests[1:]] == [True, False, False]
        (spent,) = other.spending()
        assert spent["attempts"] == 3 and spent["failures"] == {"client_error": 1}


def test_the_timeout_is_a_deadline_for_the_whole_request():
    import time

    with ChatServer(always(UP), faults=["trickle"]) as server:  # 20 s of spaces, then JSON
        agent = _agent(server, timeout=1.0, max_retries=0)
        started = time.monotonic()
        with pytest.raises(AgentError, match="Timeout"):
            agent.act([AgentRequest("p")])
        assert time.monotonic() - started < 5
        agent.close()


def test_top_k_is_sent_when_asked_for(tmp_path):
    with ChatServer(always(UP)) as server:
        assert _eval(server, tmp_path / "a", "--episodes", "1", "--top-k", "5",
                     "--env-kwargs", '{"max_episode_steps": 1}') == 0
        assert _eval(server, tmp_path / "b", "--episodes", "1",
                     "--env-kwargs", '{"max_episode_steps": 1}') == 0
    assert [r.get("top_k") for r in server.requests] == [5, None]
    (path,) = (tmp_path / "a").glob("*.jsonl")
    (settings,) = [r for r in read_records(path) if r["type"] == "settings"]
    assert settings["agent"]["sampling"]["top_k"] == 5
