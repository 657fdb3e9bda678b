"""Scripted episodes for the OpenRLHF tests: a stand-in for OpenRLHF's vLLM actor, and the same
episode played straight on the env as the reference.

:class:`ScriptedEngine` has the ``generate`` coroutine OpenRLHF's agent executor awaits and
answers each call with the next scripted response, shaped as vLLM returns it (the response
tokens end with the end-of-turn token, the text does not). :func:`play` runs an agent's
responses through ``EnvFactory`` directly, the way ARLArena's collector records turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from arlarena_baselines.openrlhf.settings import AgentSettings, Task
from wrappers.agents.base import Agent, AgentRequest
from wrappers.format import format_response

__all__ = ["Reference", "ScriptedEngine", "play", "run_executor"]

MALFORMED = "I will just do something."  # no <action> block: a format-penalised turn


@dataclass
class Reference:
    """An episode as ARLArena's collector sees it."""

    prompts: list[str] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    anchors: list[str] = field(default_factory=list)
    valid: list[bool] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return float(self.info.get("score", float(bool(self.info.get("won")))))


def play(settings: AgentSettings, task: Task, agent: Agent, malformed_first: bool = False,
         random_turns: Sequence[str] = ()) -> Reference:
    """Play one episode: optionally a malformed turn and some given actions first, then
    ``agent``'s responses, until the env ends it or ``settings.max_turns`` turns."""
    env = settings.factory()
    ref = Reference()
    prompt, info = env.reset(seed=task.seed, options=task.options or None)
    scripted = ([MALFORMED] if malformed_first else []) + [
        format_response("Trying a move.", action) for action in random_turns
    ]
    done = False
    while not done:
        turn = len(ref.responses)
        response = (scripted[turn] if turn < len(scripted)
                    else agent.act([AgentRequest(prompt, info, env)])[0])
        ref.prompts.append(prompt)
        ref.anchors.append(str(info.get("anchor", "")))
        prompt, reward, terminated, truncated, info = env.step(response)
        ref.responses.append(response)
        ref.rewards.append(float(reward))
        ref.valid.append(bool(info.get("format_ok", True)))
        limit = settings.max_turns
        done = terminated or truncated or (limit is not None and len(ref.responses) >= limit)
    ref.info = info
    env.close()
    return ref


class ScriptedEngine:
    """Answers OpenRLHF's ``llm_engine.generate`` calls with the given responses, in order,
    each ending with ``stop_id`` (default: the tokenizer's end-of-sequence token)."""

    def __init__(self, tokenizer: Any, responses: Sequence[str], stop_id: int | None = None
                 ) -> None:
        self.tokenizer = tokenizer
        self.responses = list(responses)
        self.stop_id = tokenizer.eos_token_id if stop_id is None else stop_id
        self.calls: list[list[int]] = []

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any,
                       multi_modal_data: Any = None) -> SimpleNamespace:
        self.calls.append(list(prompt_token_ids))
        text = self.responses[len(self.calls) - 1]
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        output = SimpleNamespace(token_ids=[*ids, self.stop_id], text=text,
                                 finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[output])


async def run_executor(executor: Any, tokenizer: Any, task: Task, responses: Sequence[str],
                       max_length: int = 32768) -> dict[str, Any]:
    """One ``executor.execute`` call as OpenRLHF's vLLM actor makes it."""
    sampling_params = SimpleNamespace(max_tokens=None, logprobs=None)
    return await executor.execute(
        prompt=f"task {task.seed}", label=task.label(), sampling_params=deepcopy(sampling_params),
        max_length=max_length, hf_tokenizer=tokenizer, llm_engine=ScriptedEngine(tokenizer,
                                                                                 responses),
    )
