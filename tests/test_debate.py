"""Debate and aggressive debate against real OpenAI-compatible servers on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

import wrappers.agents.debate  # noqa: F401  (registers the debate agents)
from arlarena_baselines.cli import main
from arlarena_baselines.evaluation import read_records
from tests.chat_server import ChatServer, always
from wrappers.agents import AgentError, AgentRequest, make_agent
from wrappers.agents.debate import Participant, load_debate_config, parse_participants
from wrappers.format import format_response, parse_response

MOVES = ["up", "down", "left", "right"]


def say(action: str, why: str = "it looks best") -> str:
    return format_response(f"I choose {action} because {why}.", action)


def follower(first: str):
    """Proposes ``first``, then adopts the first other agent's action once it has read it."""

    def respond(messages):
        last = messages[-1]["content"]
        if messages[-1]["role"] == "user" and "The other agents proposed" in last:
            agreed = last.split("action '", 1)[1].split("'", 1)[0]
            return say(agreed, "the other agent convinced me")
        return say(first)

    return respond


def _records(path):
    records = list(read_records(path))
    return ([r for r in records if r["type"] == "turn"],
            [r for r in records if r["type"] == "episode"])


def test_debate_on_two_servers_reaches_consensus_and_records_every_round(tmp_path, capsys):
    with ChatServer(always(say("up")), model="alpha") as a, \
            ChatServer(follower("left"), model="beta") as b:
        status = main(["eval", "--env", "sokoban", "--agent", "debate", "--debaters",
                       f"alpha@{a.base_url},beta@{b.base_url}", "--episodes", "2",
                       "--batch-size", "2", "--out", str(tmp_path), "--no-progress"])
        assert status == 0
        assert {r["model"] for r in a.requests} == {"alpha"}
        assert {r["model"] for r in b.requests} == {"beta"}
        follow_up = next(r for r in b.requests if len(r["messages"]) == 4)
        assert [m["role"] for m in follow_up["messages"]] == ["system", "user", "assistant",
                                                               "user"]
        assert "Agent 1: action 'up'" in follow_up["messages"][-1]["content"]
    (path,) = tmp_path.glob("Sokoban-v0__debate_alpha_beta.jsonl")
    turns, episodes = _records(path)
    assert len(episodes) == 2 and turns
    for turn in turns:
        rounds = turn["transcript"]["rounds"]
        assert [[p["action"] for p in r] for r in rounds] == [["up", "left"], ["up", "up"]]
        assert [p["model"] for p in rounds[0]] == ["alpha", "beta"]
        assert turn["transcript"]["decision"] == "consensus"
        assert turn["format_ok"] and turn["parsed_action"] == "up"
        assert parse_response(turn["response"], MOVES).format_ok
        assert turn["usage"]["requests"] == 4  # 2 debaters x 2 rounds
    for episode in episodes:
        assert episode["usage"]["requests"] == 4 * episode["turns"]
    assert "| debate:alpha+beta | ARLArena/Sokoban-v0 | all | 2 |" in capsys.readouterr().out


def test_aggressive_debate_with_a_judge_on_one_server_with_several_models(tmp_path):
    models = {"alpha": always(say("up")), "stubborn": always(say("left")),
              "judge": always(say("down", "it makes progress soonest"))}
    with ChatServer(models=models) as server:
        status = main(["eval", "--env", "sokoban", "--agent", "aggressive-debate",
                       "--debaters", "alpha,stubborn", "--judge", "judge", "--base-url",
                       server.base_url, "--episodes", "1", "--out", str(tmp_path),
                       "--no-progress"])
        assert status == 0
        systems = {r["messages"][0]["content"] for r in server.requests}
        assert all("finite horizon of 15 steps" in s and "finish as early as you can" in s
                   for s in systems)
        judge = next(r for r in server.requests if r["model"] == "judge")
        assert "Agent 2: action 'left'" in judge["messages"][-1]["content"]
    (path,) = tmp_path.glob("*.jsonl")
    turns, (episode,) = _records(path)
    assert "aggressive-debate:alpha+stubborn/judge=judge" == episode["agent"]
    for turn in turns:
        transcript = turn["transcript"]
        assert transcript["method"] == "aggressive-debate"
        assert transcript["votes"] == {"up": 1, "left": 1}
        assert transcript["decision"] == "judge" and transcript["judge"]["action"] == "down"
        assert turn["parsed_action"] == "down" and turn["format_ok"]
        assert turn["usage"]["requests"] == 5  # 2 debaters x 2 rounds + the judge
        assert "it makes progress soonest" in turn["response"]
    assert episode["usage"]["requests"] == 5 * episode["turns"]


def _debate(server, *debaters, **options):
    return make_agent("debate", debaters=list(debaters), base_url=server.base_url,
                      api_key="k", backoff=0.01, **options)


REQUEST = AgentRequest("Which way?", {"admissible_actions": MOVES})


def test_votes_break_ties_by_debater_order_and_count_majorities():
    models = {"alpha": always(say("up")), "stubborn": always(say("left")),
              "chatty": always("I would go left, definitely.")}
    with ChatServer(models=models) as server:
        (tie,) = _debate(server, "alpha", "stubborn", rounds=1).respond([REQUEST])
        assert tie.transcript["decision"] == "plurality" and tie.transcript["action"] == "up"
        (two,) = _debate(server, "alpha", "stubborn", "stubborn", rounds=1).respond([REQUEST])
        assert two.transcript["decision"] == "majority" and two.transcript["action"] == "left"
        # An answer without an <action> block gets no vote.
        (one,) = _debate(server, "chatty", "alpha", rounds=1).respond([REQUEST])
        assert one.transcript["votes"] == {"up": 1} and one.transcript["action"] == "up"
        assert parse_response(one.text, MOVES).format_ok


def test_the_final_answer_is_strict_even_when_the_debaters_are_not():
    sloppy = "<think>向上 is best</think><action>up</action>"  # CJK fails the format check
    with ChatServer(models={"a": always(sloppy), "b": always(sloppy)}) as server:
        (reply,) = _debate(server, "a", "b", rounds=1).respond([REQUEST])
    assert reply.transcript["votes"] == {"up": 2}
    assert parse_response(reply.text, MOVES).format_ok


def test_a_failing_debater_is_dropped_and_all_failing_is_an_episode_error(tmp_path):
    with ChatServer(always(say("up")), model="good") as good, \
            ChatServer(always(say("up")), model="bad", broken="empty_choices") as bad:
        agent = make_agent("debate", debaters=f"good@{good.base_url},bad@{bad.base_url}",
                           max_retries=0, backoff=0.01)
        (reply,) = agent.respond([REQUEST])
        assert reply.error is None and reply.transcript["action"] == "up"
        assert "no choices" in reply.transcript["rounds"][0][1]["error"]
        assert len(reply.transcript["rounds"][1]) == 1  # only the good debater goes on
        with pytest.raises(AgentError, match="every debater failed"):
            make_agent("debate", debaters=f"bad@{bad.base_url}", max_retries=0).act([REQUEST])
        status = main(["eval", "--agent", "debate", "--debaters", f"bad@{bad.base_url}",
                       "--episodes", "2", "--max-retries", "0", "--out", str(tmp_path),
                       "--no-progress"])
    assert status == 1
    (path,) = tmp_path.glob("*.jsonl")
    _, episodes = _records(path)
    assert len(episodes) == 2
    assert all("every debater failed in round 1" in e["error"] for e in episodes)


def test_participants_and_config_files(tmp_path, monkeypatch):
    assert parse_participants("a@http://h:1/v1, b") == [Participant("a", "http://h:1/v1"),
                                                         Participant("b")]
    with pytest.raises(ValueError, match="no debaters"):
        parse_participants(" , ")
    with pytest.raises(ValueError, match="unknown keys"):
        Participant.parse({"model": "a", "colour": "red"})
    config = {"debaters": [{"model": "a", "temperature": 0.9},
                           {"model": "b", "base_url": "http://127.0.0.1:1/v1",
                            "api_key_env": "B_KEY"}],
              "judge": "j", "rounds": 3,
              "prices": {"a": {"prompt": 1.0, "completion": 2.0}}}
    path = tmp_path / "debate.json"
    path.write_text(json.dumps(config))
    assert load_debate_config(path)["rounds"] == 3
    with pytest.raises(ValueError, match="B_KEY"):
        make_agent("debate", debaters=str(path))
    monkeypatch.setenv("B_KEY", "secret")
    with pytest.raises(ValueError, match="no price for model 'b'"):
        make_agent("debate", debaters=str(path))
    more = {"b": {"prompt": 0, "completion": 0}, "j": {"prompt": 3, "completion": 4}}
    agent = make_agent("debate", debaters=str(path), prices=more)
    assert (agent.rounds, agent.decision, agent.name) == (3, "judge", "debate:a+b/judge=j")
    assert agent.endpoints[0].sampling["temperature"] == 0.9
    assert agent.endpoints[0].price == {"prompt": 1.0, "completion": 2.0}
    assert agent.endpoints[1].base_url == "http://127.0.0.1:1/v1"
    assert agent.endpoints[1].price == {"prompt": 0.0, "completion": 0.0}
    assert agent.judge_endpoint.price == {"prompt": 3.0, "completion": 4.0}
    agent.close()
    yaml_path = tmp_path / "debate.yaml"
    yaml_path.write_text("debaters: [a, a, a]\ndecision: vote\n")
    agent = make_agent("aggressive-debate", debaters=str(yaml_path))
    assert agent.name == "aggressive-debate:3xa" and agent.decision == "vote"
    agent.close()
    with pytest.raises(ValueError, match="needs a judge"):
        make_agent("debate", debaters="a,b", decision="judge")
    with pytest.raises(ValueError, match="needs debaters"):
        make_agent("debate")
    with pytest.raises(FileNotFoundError):
        make_agent("debate", debaters=str(tmp_path / "missing.yaml"))
