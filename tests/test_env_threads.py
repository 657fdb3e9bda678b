"""Every env of the suite, played from several threads at once, gives the episodes it gives alone.

OpenRLHF's vLLM actor plays a prompt's samples at the same time (``asyncio.gather`` over
``execute`` calls), and its agent builds, resets and steps each env in ``asyncio.to_thread``, as
GEM, verifiers and SkyRL do. For each env, 8 episodes (4 tasks × 2, as two members of a group
share a task) run in 8 threads that build their envs together and reset together (a barrier),
then step freely; each must equal the same task played alone. The last test runs OpenRLHF's own
``MultiTurnAgentExecutor`` (the agent file as OpenRLHF loads it) with 8 samples of one prompt
concurrently, one event loop, the env calls in its worker threads.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from copy import deepcopy
from types import SimpleNamespace
from typing import Any

import pytest

import wrappers.agents  # noqa: F401  (registers the scripted agents)
from arlarena_baselines.openrlhf.settings import AgentSettings, Task
from tests.openrlhf_scripted import Reference, ScriptedEngine, play
from wrappers.agents.base import make_agent

THREADS = 8
OOD = "eval_out_of_distribution"

# env -> (ARLARENA_* settings, the 4 tasks, agent)
CASES: dict[str, tuple[dict[str, str], list[Task], str]] = {
    "sokoban": ({"ARLARENA_ENV": "sokoban"}, [Task(s) for s in (0, 1, 2, 3)], "expert"),
    "webshop-small": ({"ARLARENA_ENV": "ARLArena/WebShop-Small-v0"},
                      [Task(i, {"split": "eval", "index": i}) for i in (0, 1, 2, 3)], "expert"),
    "math": ({"ARLARENA_ENV": "math", "ARLARENA_ENV_KWARGS": '{"dataset": "arithmetic"}'},
             [Task(s) for s in (0, 1, 2, 3)], "math-coder"),
    "bandit": ({"ARLARENA_ENV": "ARLArena/Bandit-v0"}, [Task(s) for s in (0, 1, 2, 3)], "expert"),
    "alfworld": ({"ARLARENA_ENV": "alfworld"},
                 [Task(0, {"split": OOD, "index": i}) for i in (6, 7, 6, 7)], "expert"),
}


def _environ(name: str, cache: Any) -> dict[str, str]:
    environ = dict(CASES[name][0])
    if environ["ARLARENA_ENV"] == "alfworld":
        environ["ARLARENA_ENV_KWARGS"] = json.dumps({"cache_dir": str(cache)})
    return environ


@dataclasses.dataclass(frozen=True)
class _Together:
    """An env factory whose callers build their envs, and then reset them, at the same moment."""

    settings: AgentSettings
    barrier: threading.Barrier

    def __call__(self) -> Any:
        self.barrier.wait()
        env = self.settings.factory()
        reset = env.reset

        def reset_together(**kwargs: Any) -> Any:
            self.barrier.wait()
            return reset(**kwargs)

        env.reset = reset_together
        return env


def _episode(ref: Reference) -> tuple:
    return (ref.prompts, ref.responses, ref.rewards, ref.anchors, ref.valid,
            bool(ref.info.get("won")), ref.score)


@pytest.mark.parametrize("name", CASES)
def test_threaded_episodes_equal_sequential_ones(name, tmp_path):
    settings = AgentSettings.from_environ(_environ(name, tmp_path))
    _, tasks, agent = CASES[name]
    tasks = tasks * (THREADS // len(tasks))
    alone = [play(settings, task, make_agent(agent)) for task in tasks]
    assert all(ref.info.get("won") for ref in alone)

    barrier = threading.Barrier(THREADS, timeout=120)
    together = dataclasses.replace(settings, factory=_Together(settings, barrier))
    with ThreadPoolExecutor(THREADS) as pool:
        threaded = list(pool.map(lambda task: play(together, task, make_agent(agent)), tasks))

    assert [_episode(r) for r in threaded] == [_episode(r) for r in alone]


@pytest.mark.parametrize("name", ["sokoban", "alfworld"])  # the envs with shared state to guard
def test_openrlhf_executor_plays_8_samples_of_a_prompt_concurrently(name, monkeypatch, tmp_path):
    pytest.importorskip("ray")
    pytest.importorskip("openrlhf.utils.agent")
    from tests.openrlhf_cpu import gpu_only_stubs

    with gpu_only_stubs():
        from openrlhf.trainer.ray.vllm_engine import _load_agent_executor
    from arlarena_baselines.openrlhf import turn_logs
    from arlarena_baselines.openrlhf.launch import AGENT_FILE
    from arlarena_baselines.trainer.models import smollm2_tokenizer

    for key, value in {**_environ(name, tmp_path), "ARLARENA_METHOD": "GiGPO"}.items():
        monkeypatch.setenv(key, value)
    settings = AgentSettings.from_environ()
    _, tasks, agent = CASES[name]
    task = tasks[0]
    ref = play(settings, task, make_agent(agent))
    tokenizer = smollm2_tokenizer()
    executor = _load_agent_executor(str(AGENT_FILE))

    async def samples() -> list[dict]:
        # As OpenRLHF's `generate_responses`: one sampling-params object for all the samples.
        shared = SimpleNamespace(max_tokens=None, logprobs=None)
        return await asyncio.gather(*(
            executor.execute(prompt=f"task {task.seed}", label=task.label(),
                             sampling_params=shared, max_length=32768, hf_tokenizer=tokenizer,
                             llm_engine=ScriptedEngine(tokenizer, ref.responses))
            for _ in range(THREADS)
        ))

    outs = asyncio.run(samples())
    assert ref.info["won"]
    first = deepcopy(outs[0])
    assert first["reward"] == pytest.approx(sum(ref.rewards))
    assert first["extra_logs"][turn_logs.TURN_ANCHORS] == [turn_logs.anchor_id(a)
                                                          for a in ref.anchors]
    for out in outs:
        assert out["observation_tokens"] == first["observation_tokens"]
        assert out["action_ranges"] == first["action_ranges"]
        assert out["extra_logs"] == first["extra_logs"]
        assert out["reward"] == first["reward"]
