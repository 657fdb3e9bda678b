"""An API evaluation stopped at any moment (issue 49): real signals (SIGINT, SIGTERM, SIGKILL)
sent to a real ``arlarena eval`` process, requests counted at a real OpenAI-compatible server
on 127.0.0.1. Nothing the server answered is bought twice, every attempt sent is in the spend
record, and a second writer of a results file is refused at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from arlarena_baselines.cli import main
from arlarena_baselines.evaluation import read_records
from tests.chat_server import ChatServer, always

pytestmark = pytest.mark.usefixtures("sigint_reaches_children")

ROOT = Path(__file__).resolve().parents[1]
UP = "<think>Going up.</think><action>up</action>"
# 8 episodes of at most 3 turns, all 8 in flight at once.
RUN = ["--env", "sokoban", "--agent", "openai", "--model", "test-model", "--no-progress",
       "--max-retries", "0", "--episodes", "8", "--batch-size", "8", "--concurrency", "8",
       "--env-kwargs", '{"max_episode_steps": 3}']


def _command(server: ChatServer, out: Path, *extra: str) -> list[str]:
    return ["eval", *RUN, "--base-url", server.base_url, "--out", str(out), *extra]


def _spawn(server: ChatServer, out: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "arlarena_baselines.cli",
                             *_command(server, out, *extra)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait(condition: Callable[[], bool], what: str, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _attempts(out: Path) -> int:
    """The attempts the spend records of the results in ``out`` say were sent."""
    (path,) = out.glob("*.jsonl")
    return sum(r.get("attempts", 0) for r in read_records(path) if r["type"] == "spend")


def _uninterrupted(tmp_path: Path) -> int:
    """How many requests the run makes when nothing stops it."""
    with ChatServer(always(UP)) as server:
        assert main(_command(server, tmp_path / "whole")) == 0
    return len(server.requests)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_keeps_the_replies_in_flight_and_the_resume_buys_none_again(
        tmp_path, stop):
    whole = _uninterrupted(tmp_path)
    with ChatServer(always(UP), delay=1.0) as server:
        run = _spawn(server, tmp_path)
        _wait(lambda: len(server.requests) >= 8, "the first 8 requests")
        run.send_signal(stop)
        _, err = run.communicate(timeout=60)
        assert _attempts(tmp_path) == len(server.requests) == 8  # each one on record
        server.delay = 0
        assert main(_command(server, tmp_path, "--resume")) == 0
        assert len(server.requests) == whole  # the 8 answered in flight came from the cache
    assert _attempts(tmp_path) == whole
    assert run.returncode == 128 + stop, err
    assert "interrupted (" in err and "episodes are unfinished" in err


def test_a_killed_run_has_every_attempt_it_sent_on_record(tmp_path):
    whole = _uninterrupted(tmp_path)
    with ChatServer(always(UP), delay=1.0) as server:
        run = _spawn(server, tmp_path)
        _wait(lambda: len(server.requests) >= 8, "the first 8 requests")
        run.send_signal(signal.SIGKILL)
        run.communicate(timeout=60)
        assert _attempts(tmp_path) == len(server.requests) == 8
        server.delay = 0
        assert main(_command(server, tmp_path, "--resume")) == 0
        # What was in flight at the kill was lost (nothing could keep it) and bought again.
        assert whole < len(server.requests) <= whole + 8
    assert _attempts(tmp_path) == len(server.requests)


def test_ctrl_c_during_a_long_retry_after_wait_exits_at_once(tmp_path):
    with ChatServer(always(UP), fail_first=10**9, status=429, retry_after="20") as server:
        run = _spawn(server, tmp_path, "--max-retries", "3", "--episodes", "1")
        _wait(lambda: len(server.requests) >= 1, "the first request")
        time.sleep(0.5)  # into the 20 s wait
        started = time.monotonic()
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=60)
        assert time.monotonic() - started < 8, err
        assert run.returncode == 130 and len(server.requests) == 1
    assert _attempts(tmp_path) == 1


def test_a_second_writer_of_a_results_file_stops_at_once_with_one_line(tmp_path, capsys):
    with ChatServer(always(UP), delay=0.3) as server:
        first = _spawn(server, tmp_path, "--batch-size", "1")
        _wait(lambda: len(server.requests) >= 1, "the first writer's first request")
        second = ["--batch-size", "1", "--resume", "--api-key", "second"]
        assert main(_command(server, tmp_path, *second)) == 2
        assert first.poll() is None  # refused without waiting for the first to end
        # one error line, after the line saying which tasks the run would play
        err = [line for line in capsys.readouterr().err.splitlines()
               if not line.startswith("tasks: ")]
        assert len(err) == 1 and "is being written by another evaluation" in err[0], err
        assert "Bearer second" not in server.keys  # the second sent nothing
        server.delay = 0  # the first writer held the file while it was refused: let it finish
        _, first_err = first.communicate(timeout=300)
        assert first.returncode == 0, first_err
        (path,) = tmp_path.glob("*.jsonl")
        ids = [r["episode_id"] for r in read_records(path) if r["type"] == "episode"]
        assert len(ids) == len(set(ids)) == 8
        sent = len(server.requests)
        assert main(_command(server, tmp_path, "--resume")) == 0  # the lock went with its holder
        assert len(server.requests) == sent
