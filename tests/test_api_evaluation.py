"""Evaluating API models with money on the line (issue 32), against real OpenAI-compatible
servers on 127.0.0.1: results that name their settings, budgets that lose nothing, reports
that never double count."""

from __future__ import annotations

import csv
import json

import wrappers.agents.debate  # registers the debate agents; its prompts are changed below
from arlarena_baselines.cli import main
from arlarena_baselines.evaluation import EvalConfig, evaluate, read_records
from arlarena_baselines.evaluation.spending import total_spend
from arlarena_baselines.rollout.envs import EnvFactory
from tests.chat_server import ChatServer, always
from wrappers.agents import make_agent

UP = "<think>Going up.</think><action>up</action>"
SHORT = ["--env-kwargs", '{"max_episode_steps": 3}']


def _eval(server: ChatServer, out, *extra: str, model: str = "test-model") -> int:
    env = [] if "--panel" in extra else ["--env", "sokoban"]
    return main(["eval", *env, "--agent", "openai", "--model", model, "--base-url",
                 server.base_url, "--out", str(out), "--no-progress", "--max-retries", "0",
                 *extra])


def _records(out, kind: str) -> list[dict]:
    (path,) = out.glob("*.jsonl")
    return [r for r in read_records(path) if r["type"] == kind]


def _spent(out, run: int | None = None) -> list[dict]:
    """What the spend records of the results in ``out`` add up to, per model (of run number
    ``run`` alone: 0 the first, in the order the file has them)."""
    spend = _records(out, "spend")
    runs = list(dict.fromkeys(r["run"] for r in spend))
    if run is not None:
        spend = [r for r in spend if r["run"] == runs[run]]
    return total_spend(spend)


def _row(table: str, agent: str, group: str | None = "all") -> dict[str, str]:
    """The row of ``agent`` (in ``group``) in a markdown table, by column name."""
    lines = [line for line in table.splitlines() if line.startswith("| ")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    for line in lines[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == agent and group in (None, cells[2]):
            return dict(zip(head, cells, strict=True))
    raise AssertionError(f"no row of {agent} in\n{table}")


# ---------------------------------------------------------------- results that name their settings
def test_a_results_file_records_once_what_produced_it_and_never_the_key(tmp_path, capsys):
    args = ["--panel", "sokoban-eval", "--api-key", "sk-secret-key", "--temperature", "0.3",
            "--api-seed", "5", *SHORT]
    with ChatServer(always(UP)) as server:
        assert _eval(server, tmp_path, *args, "--episodes", "2") == 0
        assert _eval(server, tmp_path, *args, "--episodes", "3", "--resume") == 0  # more tasks
    (path,) = tmp_path.glob("*.jsonl")
    assert "sk-secret-key" not in path.read_text()
    records = list(read_records(path))
    (settings,) = [r for r in records if r["type"] == "settings"]
    assert records[0] is settings
    assert settings["agent"]["endpoint"] == server.base_url
    assert settings["agent"]["model"] == "test-model" and settings["agent"]["seed"] == 5
    assert settings["agent"]["sampling"] == {"max_tokens": 500, "temperature": 0.3, "top_p": 1.0}
    assert settings["env"]["id"] == "ARLArena/Sokoban-v0"
    assert settings["env"]["panel"] == "sokoban-eval"
    assert settings["env"]["kwargs"]["max_episode_steps"] == 3
    prompt = settings["prompt"]
    assert (prompt["template"], prompt["history_length"], prompt["format_check"],
            prompt["checked_by"]) == ("sokoban", 2, "study", "sokoban")
    assert len(prompt["template_version"]) == 16
    assert settings["arlarena"] not in ("", "unknown")
    episodes = [r for r in records if r["type"] == "episode"]
    assert len(episodes) == 3 and {e["settings"] for e in episodes} == {settings["digest"]}


def test_resume_refuses_other_settings_names_them_and_force_overrides(tmp_path, capsys):
    args = [*SHORT, "--episodes", "2"]
    with ChatServer(always(UP)) as server:
        assert _eval(server, tmp_path, *args) == 0
        (path,) = tmp_path.glob("*.jsonl")
        before, sent = path.read_bytes(), len(server.requests)
        capsys.readouterr()
        changed = ["--temperature", "1.5", "--max-tokens", "50", "--history-length", "0",
                   "--episodes", "4", "--resume"]
        assert _eval(server, tmp_path, *SHORT, *changed) == 2
        err = capsys.readouterr().err
        assert "agent.sampling.temperature: 0.4 -> 1.5" in err
        assert "agent.sampling.max_tokens: 500 -> 50" in err
        assert "prompt.history_length: 2 -> 0" in err and "--force" in err
        assert path.read_bytes() == before and len(server.requests) == sent
        assert _eval(server, tmp_path, *SHORT, *changed, "--force") == 0
    settings = [r for r in read_records(path) if r["type"] == "settings"]
    assert [s["agent"]["sampling"]["temperature"] for s in settings] == [0.4, 1.5]
    episodes = _records(tmp_path, "episode")
    assert sorted(e["settings"] for e in episodes) == sorted(
        [settings[0]["digest"]] * 2 + [settings[1]["digest"]] * 2)
    capsys.readouterr()
    assert main(["report", str(path), "--merge-settings"]) == 0
    assert "ran under 2 different settings" in capsys.readouterr().err


def test_the_cache_never_answers_for_another_endpoint(tmp_path, capsys):
    cache = ["--cache-dir", str(tmp_path / "cache"), *SHORT, "--episodes", "2"]
    with ChatServer(always(UP)) as good:
        assert _eval(good, tmp_path / "good", *cache) == 0
    with ChatServer(always(UP), fail_first=10**9, status=500) as failing:
        capsys.readouterr()
        assert _eval(failing, tmp_path / "failing", *cache) == 1
        assert len(failing.requests) == 2  # one per episode: each ends with the 500
    assert "0 from the cache" in capsys.readouterr().err
    assert all(e["error"] for e in _records(tmp_path / "failing", "episode"))


# ---------------------------------------------------------------- budgets that lose nothing
def test_a_budget_stop_exits_nonzero_and_a_resume_pays_for_nothing_twice(tmp_path, capsys):
    args = ["--episodes", "4", "--seed", "2"]  # 4 in flight, no --cache-dir
    with ChatServer(always(UP)) as server:
        assert _eval(server, tmp_path, *args, "--max-requests", "10") == 3
        err = capsys.readouterr().err
        kept = _records(tmp_path, "episode")
        assert f"{4 - len(kept)} of 4 episodes are unfinished" in err
        (spent,) = _spent(tmp_path)
        assert spent["attempts"] == spent["answered"] == len(server.requests) == 10
        assert _eval(server, tmp_path, *args, "--resume") == 0
    turns = _records(tmp_path, "turn")
    assert len(_records(tmp_path, "episode")) == 4
    assert len(server.requests) == len(turns)  # the 10 paid replies were not bought again
    (resumed,) = _spent(tmp_path, run=1)
    assert resumed["attempts"] == len(turns) - 10
    assert resumed["cache_hits"] == 10 - sum(e["turns"] for e in kept)


def test_every_attempt_and_failure_is_counted_in_the_results_and_the_report(tmp_path, capsys):
    faults = [500, 429, "hang", "malformed", "empty_choices"]  # then good answers
    with ChatServer(always(UP), faults=faults) as server:
        agent = make_agent("openai", model="test-model", base_url=server.base_url,
                           api_key="k", backoff=0.01, timeout=0.5, max_retries=5)
        config = EvalConfig(EnvFactory(env_kwargs={"max_episode_steps": 3}), episodes=1,
                            batch_size=1, seed=2)
        evaluate(config, agent, tmp_path / "r.jsonl", progress=False)
        agent.close()
    records = list(read_records(tmp_path / "r.jsonl"))
    (spent,) = total_spend(records)
    turns = [r for r in records if r["type"] == "turn"]
    assert spent["attempts"] == len(server.requests) == len(turns) + len(faults)
    assert spent["answered"] == len(turns)
    assert spent["failures"] == {"server_error": 1, "rate_limit": 1, "timeout": 1,
                                 "bad_reply": 2}
    # Billed: the answered tokens, and for a timeout or a bad reply, what it may have cost.
    maybe_billed = server.requests[2:5]
    estimate = sum(len(json.dumps({"messages": r["messages"]}, ensure_ascii=False)) // 4
                   + r["max_tokens"] for r in maybe_billed)
    answered = spent["prompt_tokens"] + spent["completion_tokens"]
    assert answered == sum(t["usage"]["prompt_tokens"] + t["usage"]["completion_tokens"]
                           for t in turns)
    assert spent["est_billed_tokens"] == answered + estimate
    assert main(["report", str(tmp_path / "r.jsonl")]) == 0
    out = capsys.readouterr().out
    row = _row(out.split("API spending")[1], "openai:test-model", group=None)
    assert row["attempts"] == str(len(server.requests))
    assert row["failed"] == "5 (bad_reply 2, rate_limit 1, server_error 1, timeout 1)"
    assert row["est. billed tokens"] == str(answered + estimate)


# ---------------------------------------------------------------- reports that never double count
def test_a_report_counts_each_episode_once(tmp_path, capsys):
    prices = ["--prices", '{"test-model": {"prompt": 2.0, "completion": 10.0}}']
    args = [*SHORT, "--episodes", "2", "--cache-dir", str(tmp_path / "cache"), *prices]
    with ChatServer(always(UP)) as server:
        assert _eval(server, tmp_path / "a", *args) == 0
        assert _eval(server, tmp_path / "b", *args) == 0  # a cached rerun in another folder
    (a,), (b,) = (tmp_path / "a").glob("*.jsonl"), (tmp_path / "b").glob("*.jsonl")
    capsys.readouterr()
    assert main(["report", str(a)]) == 0
    once = _row(capsys.readouterr().out, "openai:test-model")
    for files, warning in (([a, a], "given more than once"), ([a, b], "already read")):
        assert main(["report", *map(str, files)]) == 0
        out, err = capsys.readouterr()
        assert _row(out, "openai:test-model") == once and warning in err
        assert "pass@2" not in out


def test_prices_must_name_every_model_before_anything_is_sent(tmp_path, capsys):
    with ChatServer(always(UP)) as server:
        typo = '{"test-modle": {"prompt": 1, "completion": 2}}'
        assert _eval(server, tmp_path, "--prices", typo) == 2
        assert "no price for model 'test-model'" in capsys.readouterr().err
        models = {name: always(UP) for name in ("alpha", "beta", "gamma")}
    with ChatServer(models=models) as debate:
        two = json.dumps({m: {"prompt": 1, "completion": 2} for m in ("alpha", "beta")})
        status = main(["eval", "--agent", "debate", "--debaters", "alpha,beta,gamma",
                       "--base-url", debate.base_url, "--prices", two, "--episodes", "1",
                       "--out", str(tmp_path), "--no-progress"])
        assert status == 2 and "no price for model 'gamma'" in capsys.readouterr().err
    assert server.requests == [] and debate.requests == []


def test_a_report_row_with_unpriced_episodes_shows_a_partial_cost(tmp_path, capsys):
    prices = '{"test-model": {"prompt": 2.0, "completion": 10.0}}'
    with ChatServer(always(UP)) as server:
        assert _eval(server, tmp_path / "a", *SHORT, "--episodes", "2", "--prices", prices) == 0
        assert _eval(server, tmp_path / "b", *SHORT, "--episodes", "2", "--seed", "2") == 0
    files = [str(next((tmp_path / d).glob("*.jsonl"))) for d in "ab"]
    capsys.readouterr()
    assert main(["report", *files]) == 0
    out, err = capsys.readouterr()
    assert _row(out, "openai:test-model")["cost $"] == "partial"
    assert "cost of openai:test-model on ARLArena/Sokoban-v0 is partial" in err


def test_agent_errors_have_their_own_column_and_success_is_given_both_ways(tmp_path, capsys):
    # Seed 0's first request gets a 500 (no retry): that episode ends with an error. "up"
    # solves seed 1 in two moves.
    with ChatServer(always(UP), faults=[500]) as server:
        assert _eval(server, tmp_path, "--episodes", "2", "--batch-size", "1") == 1
    row = _row(capsys.readouterr().out, "openai:test-model")
    assert (row["episodes"], row["errors"]) == ("2", "1")
    assert (row["success"], row["success (finished)"]) == ("50.0%", "100.0%")
    (path,) = tmp_path.glob("*.jsonl")
    assert main(["report", str(path), "--csv", str(tmp_path / "t.csv")]) == 0
    with open(tmp_path / "t.csv", encoding="utf-8") as handle:
        (line,) = [r for r in csv.DictReader(handle) if r["group"] == "all"]
    assert (float(line["success"]), float(line["success_finished"])) == (0.5, 1.0)


def test_a_debate_counts_spending_per_model(tmp_path):
    models = {"alpha": always(UP), "beta": always(UP)}
    with ChatServer(models=models, faults=[500]) as server:
        status = main(["eval", "--agent", "debate", "--debaters", "alpha,alpha,beta",
                       "--base-url", server.base_url, "--episodes", "1", "--rounds", "1",
                       "--batch-size", "1", *SHORT, "--out", str(tmp_path), "--no-progress"])
        assert status == 0
    spent = {r["model"]: r for r in _spent(tmp_path)}
    assert set(spent) == {"alpha", "beta"}
    assert sum(s["attempts"] for s in spent.values()) == len(server.requests)
    for model, record in spent.items():
        asked = [r for r in server.requests if r["model"] == model]
        assert record["attempts"] == len(asked)
    assert sum(sum(s["failures"].values()) for s in spent.values()) == 1


def test_a_resume_over_a_garbled_settings_record_is_refused_and_changes_nothing(tmp_path, capsys):
    args = ["eval", "--agent", "expert", "--episodes", "2", "--out", str(tmp_path),
            "--no-progress"]
    assert main(args) == 0
    (path,) = tmp_path.glob("*.jsonl")
    lines = path.read_text().splitlines(keepends=True)
    garbled = json.dumps({"type": "settings", "digest": [1], "agent": "x", "env": None}) + "\n"
    path.write_text(garbled + "".join(lines[1:]))
    before = path.read_bytes()
    capsys.readouterr()
    assert main([*args, "--resume"]) == 2
    assert "other settings" in capsys.readouterr().err and path.read_bytes() == before


# ---------------------------------------------------------------- copies and settings
def test_a_file_copied_into_itself_or_under_another_name_adds_nothing(tmp_path, capsys):
    with ChatServer(always(UP)) as server:
        assert _eval(server, tmp_path, *SHORT, "--episodes", "2") == 0
    (path,) = tmp_path.glob("*.jsonl")
    doubled, copy = tmp_path / "doubled.jsonl", tmp_path / "copy.jsonl"
    doubled.write_text(path.read_text() * 2)  # cat F F > G
    copy.write_text(path.read_text())
    capsys.readouterr()
    assert main(["report", str(path)]) == 0
    once = capsys.readouterr().out
    assert main(["report", str(doubled)]) == 0
    out, err = capsys.readouterr()
    assert _row(out, "openai:test-model") == _row(once, "openai:test-model")
    assert "2 episode(s) it holds more than once" in err
    assert main(["report", str(path), str(copy)]) == 0
    out = capsys.readouterr().out
    spent = _row(out.split("API spending")[1], "openai:test-model", group=None)
    assert spent == _row(once.split("API spending")[1], "openai:test-model", group=None)
    assert spent["attempts"] == str(len(server.requests))


def test_a_report_gives_each_setting_its_own_rows_unless_merging_is_asked_for(tmp_path, capsys):
    with ChatServer(always(UP)) as server:
        for temperature in ("0.4", "1.0"):
            assert _eval(server, tmp_path / temperature, *SHORT, "--episodes", "2",
                         "--temperature", temperature) == 0
    files = [str(next((tmp_path / t).glob("*.jsonl"))) for t in ("0.4", "1.0")]
    capsys.readouterr()
    assert main(["report", *files]) == 0
    out = capsys.readouterr().out
    for temperature in ("0.4", "1.0"):
        row = _row(out, f"openai:test-model [agent.sampling.temperature={temperature}]")
        assert row["episodes"] == "2"
    assert "pass@2" not in out  # never across two settings
    assert main(["report", *files, "--merge-settings"]) == 0
    out, err = capsys.readouterr()
    assert _row(out, "openai:test-model")["episodes"] == "4" and "pass@2" in out
    assert "ran under 2 different settings" in err


def test_a_report_with_no_finished_episode_still_shows_the_spending(tmp_path, capsys):
    with ChatServer(always(UP)) as server:  # "up" never solves seed 0 in 2 moves
        assert _eval(server, tmp_path, "--episodes", "1", "--max-requests", "2") == 3
    (path,) = tmp_path.glob("*.jsonl")
    capsys.readouterr()
    assert main(["report", str(path)]) == 1
    out, err = capsys.readouterr()
    assert "no finished episodes" in err
    assert _row(out.split("API spending")[1], "openai:test-model", group=None)["attempts"] == "2"


def test_the_debate_prompts_have_a_version_in_the_settings(tmp_path, capsys, monkeypatch):
    models = {"alpha": always(UP)}
    args = ["eval", "--agent", "debate", "--debaters", "alpha,alpha", "--episodes", "1",
            "--rounds", "1", *SHORT, "--out", str(tmp_path), "--no-progress"]
    with ChatServer(models=models) as server:
        assert main([*args, "--base-url", server.base_url]) == 0
        (settings,) = _records(tmp_path, "settings")
        assert len(settings["agent"]["prompt_version"]) == 16
        for turn in _records(tmp_path, "turn"):  # each debater's reply says how it ended
            for proposal in turn["transcript"]["rounds"][0]:
                assert (proposal["finish_reason"], proposal["served_model"]) == ("stop", "alpha")
        monkeypatch.setattr(wrappers.agents.debate, "FOLLOW_UP",
                            wrappers.agents.debate.FOLLOW_UP + " Be brief.")
        sent = len(server.requests)
        capsys.readouterr()
        assert main([*args, "--base-url", server.base_url, "--resume", "--episodes", "2"]) == 2
        assert "agent.prompt_version" in capsys.readouterr().err
        assert len(server.requests) == sent
