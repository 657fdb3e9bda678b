"""``arlarena eval``: results files, the table, resume after a kill, pass@k."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from arlarena_baselines.cli import main
from arlarena_baselines.evaluation import (
    EvalConfig,
    evaluate,
    format_table,
    pass_at_k,
    read_records,
    summarize,
)
from arlarena_baselines.rollout.envs import EnvFactory
from tests.chat_server import ChatServer
from wrappers.agents import make_agent


def _episodes(path):
    return sorted(
        (r for r in read_records(path) if r["type"] == "episode"), key=lambda r: r["episode_id"]
    )


def test_cli_runs_agents_side_by_side_and_prints_the_table(tmp_path, capsys):
    status = main(["eval", "--env", "sokoban", "--agent", "expert,random", "--episodes", "12",
                   "--out", str(tmp_path), "--no-progress"])
    assert status == 0
    table = capsys.readouterr().out
    assert "| expert | ARLArena/Sokoban-v0 | all | 12 | 100.0% | 1.000 | 100.0% |" in table
    assert "| random |" in table
    expert = _episodes(tmp_path / "Sokoban-v0__expert.jsonl")
    assert len(expert) == 12 and all(e["won"] and e["valid_turns"] == e["turns"] for e in expert)
    turns = [r for r in read_records(tmp_path / "Sokoban-v0__expert.jsonl") if r["type"] == "turn"]
    assert len(turns) == sum(e["turns"] for e in expert)
    assert all(t["prompt"].startswith("\nYou are an expert agent") for t in turns)
    assert all(t["format_check"] == "sokoban" and t["notice"] is False for t in turns)


def test_cli_sampling_defaults_are_the_studys_per_env():
    from arlarena_baselines.cli.evaluate import _fill_sampling

    unset = {"max_tokens": None, "temperature": None, "top_p": None, "top_k": None}
    alfworld = argparse.Namespace(**{**unset, "temperature": 0.2})
    _fill_sampling(alfworld, "ARLArena/ALFWorld-v0")
    assert vars(alfworld) == {"max_tokens": 512, "temperature": 0.2, "top_p": 0.95, "top_k": 20}
    sokoban = argparse.Namespace(**unset)
    _fill_sampling(sokoban, "ARLArena/Sokoban-v0")
    assert vars(sokoban) == {"max_tokens": 500, "temperature": 0.4, "top_p": 1.0, "top_k": 0}


def test_refuses_to_mix_with_an_existing_file(tmp_path, capsys):
    args = ["eval", "--agent", "expert", "--episodes", "2", "--out", str(tmp_path),
            "--no-progress"]
    assert main(args) == 0
    assert main(args) == 2
    assert "--resume" in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0
    assert len(_episodes(tmp_path / "Sokoban-v0__expert.jsonl")) == 2


def test_bad_names_are_clear_errors(tmp_path, capsys):
    assert main(["eval", "--env", "chess", "--out", str(tmp_path)]) == 2
    assert "unknown environment" in capsys.readouterr().err
    assert main(["eval", "--agent", "oracle", "--out", str(tmp_path)]) == 2
    assert "unknown agent" in capsys.readouterr().err


def test_same_seeds_give_identical_results(tmp_path):
    config = EvalConfig(EnvFactory("ARLArena/Sokoban-6x6-2b-v0"), episodes=6, batch_size=4)
    runs = []
    for name in ("a", "b"):
        evaluate(config, make_agent("random", seed=3), tmp_path / f"{name}.jsonl", progress=False)
        runs.append(list(read_records(tmp_path / f"{name}.jsonl")))
    assert runs[0] == runs[1]


def test_env_worker_processes_play_the_same_episodes_as_in_process(tmp_path, capsys):
    args = ["eval", "--env", "sokoban", "--agent", "random", "--episodes", "3", "--samples", "2",
            "--batch-size", "4", "--seed", "7", "--no-progress"]
    for workers in ("0", "2"):
        assert main([*args, "--env-workers", workers, "--out", str(tmp_path / workers)]) == 0
    local, workers = ((tmp_path / w / "Sokoban-v0__random.jsonl").read_bytes() for w in "02")
    assert local == workers and local.count(b'"type": "episode"') == 6
    # An agent that reads its env needs the envs here; a bad value is named.
    for agent, workers, wanted in (("expert", "2", "in this process"),
                                   ("random", "two", "'ray' or 'ray:N'")):
        assert main([*args, "--agent", agent, "--env-workers", workers, "--out",
                     str(tmp_path / "bad")]) == 2
        assert wanted in capsys.readouterr().err


def test_evaluating_a_scripted_agent_imports_no_torch(tmp_path):
    """The episode loop and its env pools load without torch (``rollout`` loads lazily)."""
    code = ("import sys; from arlarena_baselines.evaluation import EvalConfig, evaluate; "
            "from wrappers.agents import make_agent; evaluate(EvalConfig(episodes=1), "
            f"make_agent('random'), {str(tmp_path / 'r.jsonl')!r}, progress=False); "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_resume_after_sigkill_equals_an_uninterrupted_run(tmp_path):
    env, episodes = "ARLArena/Sokoban-8x8-2b-v0", 40
    base = [sys.executable, "-m", "arlarena_baselines.cli", "eval", "--env", env, "--agent",
            "expert", "--episodes", str(episodes), "--batch-size", "1", "--no-progress"]
    killed_dir, full_dir = tmp_path / "killed", tmp_path / "full"
    path = killed_dir / "Sokoban-8x8-2b-v0__expert.jsonl"
    proc = subprocess.Popen([*base, "--out", str(killed_dir)], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if path.exists() and sum('"type": "episode"' in line for line in path.open()) >= 3:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with path.open("a") as handle:
        handle.write('{"type": "turn", "episode_id": "torn')  # a line cut by the kill
    interrupted = len(_episodes(path))
    assert 3 <= interrupted < episodes, "the run finished before it could be killed"
    assert main(["eval", "--env", env, "--agent", "expert", "--episodes", str(episodes),
                 "--batch-size", "1", "--out", str(killed_dir), "--resume", "--no-progress"]) == 0
    assert main(["eval", "--env", env, "--agent", "expert", "--episodes", str(episodes),
                 "--batch-size", "1", "--out", str(full_dir), "--no-progress"]) == 0
    resumed, full = list(read_records(path)), list(read_records(full_dir / path.name))
    key = lambda r: (r.get("episode_id", ""), r["type"], r.get("step", -1))  # noqa: E731
    assert sorted(resumed, key=key) == sorted(full, key=key)
    assert len({r["episode_id"] for r in resumed if r["type"] == "episode"}) == episodes


def _kill_after(command: list[str], path, episodes: int) -> None:
    """Run ``command`` and SIGKILL it once ``path`` holds ``episodes`` finished episodes."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and sum('"type": "episode"' in line for line in path.open()) >= episodes:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def test_a_stochastic_agent_replays_every_episode_after_kills_and_resumes(tmp_path):
    """The random agent draws from each episode's own stream: killed and resumed three times,
    with other batch sizes, every episode gets the result of an uninterrupted run."""
    episodes = 24
    flags = ["eval", "--env", "sokoban", "--agent", "random", "--episodes", str(episodes),
             "--samples", "2", "--no-progress"]
    killed, full = tmp_path / "killed", tmp_path / "full"
    path = killed / "Sokoban-v0__random.jsonl"
    cli = [sys.executable, "-m", "arlarena_baselines.cli"]
    for batch, after in (("5", 3), ("2", 12), ("7", 25)):
        resume = ["--resume"] if path.exists() else []
        _kill_after([*cli, *flags, "--batch-size", batch, "--out", str(killed), *resume],
                    path, after)
    assert len(_episodes(path)) < 2 * episodes, "the run finished before the last kill"
    assert main([*flags, "--batch-size", "3", "--out", str(killed), "--resume"]) == 0
    assert main([*flags, "--batch-size", "16", "--out", str(full)]) == 0
    key = lambda r: (r.get("episode_id", ""), r["type"], r.get("step", -1))  # noqa: E731
    resumed = sorted(read_records(path), key=key)
    assert resumed == sorted(read_records(full / path.name), key=key)
    assert len(_episodes(path)) == 2 * episodes


def test_resume_replays_exactly_the_episodes_that_ended_with_an_error(tmp_path):
    """An episode whose record carries an ``error`` (what a failed agent call leaves, its turns
    unwritten) is unfinished: ``--resume`` plays it again, and only it, so the file ends equal
    to an uninterrupted run's. (The API agent's path: test_agents_openai.py.)"""
    flags = ["eval", "--env", "sokoban", "--agent", "random", "--episodes", "4", "--seed", "2",
             "--no-progress"]
    full, failed = tmp_path / "full", tmp_path / "failed"
    assert main([*flags, "--out", str(full)]) == 0
    (path,) = full.glob("*.jsonl")
    records = list(read_records(path))
    lost = {"seed=3/sample=0", "seed=5/sample=0"}  # of seeds 2 to 5
    kept = [dict(r, error="the server answered garbage", won=False)
            if r["type"] == "episode" and r["episode_id"] in lost else r
            for r in records if not (r["type"] == "turn" and r["episode_id"] in lost)]
    failed.mkdir()
    (failed / path.name).write_text("".join(json.dumps(r) + "\n" for r in kept))
    finished = [r for r in kept if r["type"] == "episode" and r["episode_id"] not in lost]
    assert main([*flags, "--out", str(failed), "--resume"]) == 0
    key = lambda r: (r.get("episode_id", ""), r["type"], r.get("step", -1))  # noqa: E731
    resumed = list(read_records(failed / path.name))
    assert sorted(resumed, key=key) == sorted(records, key=key)
    # The two others were kept, not replayed: their records stand where they were.
    assert [r for r in resumed if r["type"] == "episode"][:2] == finished


def test_pass_at_k_estimator():
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)
    assert pass_at_k(4, 0, 4) == 0.0 and pass_at_k(4, 4, 1) == 1.0
    assert pass_at_k(4, 3, 2) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


def test_samples_give_pass_at_k_columns(tmp_path):
    config = EvalConfig(episodes=5, samples=4)
    records = evaluate(config, make_agent("random", seed=0), tmp_path / "r.jsonl", progress=False)
    assert len(records) == 20
    (row,) = summarize(records)
    assert set(row.pass_at) == {1, 2, 4}
    by_seed: dict[int, list[bool]] = {}
    for r in records:
        by_seed.setdefault(r["seed"], []).append(r["won"])
    expected = sum(any(v) for v in by_seed.values()) / 5
    assert row.pass_at[4] == pytest.approx(expected)
    assert row.pass_at[1] == pytest.approx(row.success)
    assert "pass@4" in format_table([row])


def test_report_command_reads_result_files(tmp_path, capsys):
    evaluate(EvalConfig(episodes=3), make_agent("expert"), tmp_path / "r.jsonl", progress=False)
    assert main(["report", str(tmp_path / "r.jsonl")]) == 0
    assert "| expert | ARLArena/Sokoban-v0 | all | 3 |" in capsys.readouterr().out
    (tmp_path / "empty.jsonl").write_text(json.dumps({"type": "turn"}) + "\n")
    assert main(["report", str(tmp_path / "empty.jsonl")]) == 1


def _seeded_move(messages, body):
    """A reproducible 'sample': the move depends on the prompt and the request's seed only."""
    digest = hashlib.sha256(f"{body.get('seed')}|{messages[-1]['content']}".encode()).digest()
    move = ("up", "down", "left", "right")[digest[0] % 4]
    return f"<think>Sampled with seed {body.get('seed')}.</think><action>{move}</action>"


def test_api_eval_resumes_after_sigkill_with_the_cache_and_pays_nothing_twice(tmp_path):
    args = ["eval", "--env", "sokoban", "--agent", "openai", "--model", "m", "--episodes", "4",
            "--samples", "2", "--temperature", "0.7", "--api-seed", "7", "--batch-size", "1",
            "--no-progress"]
    killed, full = tmp_path / "killed", tmp_path / "full"
    path = killed / "Sokoban-v0__openai_m.jsonl"
    with ChatServer(_seeded_move, model="m", delay=0.005) as server:
        run = [*args, "--base-url", server.base_url, "--cache-dir", str(tmp_path / "cache")]
        proc = subprocess.Popen([sys.executable, "-m", "arlarena_baselines.cli", *run,
                                 "--out", str(killed)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if path.exists() and sum('"type": "episode"' in line for line in path.open()) >= 2:
                break
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert 2 <= len(_episodes(path)) < 8, "the run finished before it could be killed"
        assert main([*run, "--out", str(killed), "--resume"]) == 0
        paid = len(server.requests)
        assert main([*args, "--base-url", server.base_url, "--cache-dir",
                     str(tmp_path / "fresh-cache"), "--out", str(full)]) == 0
        uninterrupted = len(server.requests) - paid
    # What was spent differs (the resume was answered from the cache); what was played may not.
    resumed, reference = ([r for r in read_records(p) if r["type"] != "spend"]
                          for p in (path, full / path.name))
    key = lambda r: (r.get("episode_id", ""), r["type"], r.get("step", -1))  # noqa: E731
    assert sorted(resumed, key=key) == sorted(reference, key=key)
    ids = [r["episode_id"] for r in resumed if r["type"] == "episode"]
    assert len(ids) == len(set(ids)) == 8
    turns = sum(r["type"] == "turn" for r in reference)
    assert uninterrupted == turns
    # Killed + resumed runs paid each turn once, but for at most the one request in flight.
    assert turns <= paid <= turns + 1
    samples = {(r["seed"], r["sample"]): r["response"] for r in reference
               if r["type"] == "turn" and r["step"] == 0}
    assert samples[(0, 0)] != samples[(0, 1)]  # rollouts of one task are different samples
