"""The real server: ``arlarena webshop serve`` as a subprocess on 127.0.0.1, 32 concurrent env
sessions of 15 steps over HTTP, no errors and no cross-talk between sessions."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from arlarena_envs.webshop.client import ShopConnectionError
from arlarena_envs.webshop.env import WebShopEnv

SESSIONS = 32
STEPS = 15
_CLI = "import sys; from arlarena_baselines.cli import main; sys.exit(main())"
# The installed console script when there is one, else the same entry point through Python.
ARLARENA = [shutil.which("arlarena") or ""] if shutil.which("arlarena") else [
    sys.executable, "-c", _CLI,
]


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    """Start the real CLI (``arlarena webshop serve``) on a free port and yield its URL."""
    command = [*ARLARENA, "webshop", "serve", "--small", "--port", "0"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: list[str] = []
    found: list[str] = []

    def read() -> None:
        for line in process.stdout:  # type: ignore[union-attr]
            lines.append(line)
            match = re.search(r"at (http://127\.0\.0\.1:\d+)/", line)
            if match and not found:
                found.append(match.group(1))

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + 120
    while not found and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert found, f"server did not start: {''.join(lines)}"
        yield found[0]
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)
            raise
    assert code == 0, "".join(lines)


def _session(server_url: str, number: int) -> dict[str, Any]:
    """One agent: 15 steps; even sessions end by buying their target with the expert."""
    env = WebShopEnv(server_url=server_url)
    rng = random.Random(number)
    _, info = env.reset(options={"split": "eval", "index": number})
    task, sid = info["task"], env.session_id
    pages: list[str] = [info["anchor"]]
    for step in range(STEPS):
        if number % 2 == 0 and step >= 5:
            action = env.expert_action()
        elif "search[<your query>]" in info["admissible_actions"]:
            action = f"search[{task[:40]}]"
        else:
            action = rng.choice([a for a in info["admissible_actions"] if a != "click[buy now]"])
        if action is None:
            break
        _, _, terminated, _, info = env.step(action)
        assert info["action_is_valid"], action
        pages.append(info["anchor"])
        if terminated:
            break
    return {"sid": sid, "task": task, "pages": pages, "info": info, "env": env}


@pytest.mark.slow
def test_concurrent_sessions_over_http_do_not_cross_talk(server_url: str) -> None:
    with ThreadPoolExecutor(max_workers=SESSIONS) as pool:
        runs = list(pool.map(lambda n: _session(server_url, n), range(SESSIONS)))
    assert len({run["sid"] for run in runs}) == SESSIONS
    for number, run in enumerate(runs):
        # Every page the session saw shows its own instruction.
        assert all(f"Instruction: [SEP] {run['task']} [SEP]" in page for page in run["pages"])
        with urllib.request.urlopen(f"{server_url}/api/sessions/{run['sid']}") as reply:
            state = json.load(reply)
        assert state["instruction"] == run["task"] and state["goal_index"] == number
        if number % 2 == 0:  # the expert bought the session's own target
            assert run["info"]["won"] and state["won"]
            assert state["purchase"]["asin"] == state["goal"]["asin"]
            final = run["pages"][-1]
            assert final.startswith("Thank you for shopping with us!")
            assert f"[SEP] Purchased [SEP] {state['goal']['asin']} [SEP]" in final
        else:
            assert len(run["pages"]) == STEPS + 1 and state["purchase"] is None


@pytest.mark.slow
def test_server_pages_and_api_for_people(server_url: str) -> None:
    with urllib.request.urlopen(f"{server_url}/") as reply:  # a new session, redirected
        assert re.search(r"/[0-9a-f]{16}$", reply.geturl())
        assert "<form" in reply.read().decode()
    with urllib.request.urlopen(f"{server_url}/api/shop") as reply:
        shop = json.load(reply)
    assert shop["products"] == 1000 and shop["splits"]["eval"] == 1000
    assert (shop["reward"], shop["pages"]) == ("study", "original") and shop["noun_tagger"]
    env = WebShopEnv(server_url=server_url, reward="finer")  # the server's settings win
    assert (env.reset(seed=0)[1]["reward_rule"], env.pages) == ("study", "original")
    for bad in ("/bad%20id!", "/abc/item/B0NOSUCH00", "/abc/item/B0NOSUCH00/features",
                "/api/sessions/never-started"):
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(server_url + bad)
        assert error.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(f"{server_url}/abc?split=dev&goal=1")
    assert error.value.code == 400


def test_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(ShopConnectionError, match="cannot reach"):
        WebShopEnv(server_url="http://127.0.0.1:9")  # the discard port: nothing listens
    with pytest.raises(ValueError, match="server_url"):
        WebShopEnv(server_url="ftp://example")
