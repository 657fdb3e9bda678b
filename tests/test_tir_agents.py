"""Expert-free smoke test of TIR Math: scripted agents through the real env, sandbox and prompts."""

from __future__ import annotations

import gymnasium as gym

import arlarena_envs  # noqa: F401  (registers the ids)
from wrappers import PromptWrapper
from wrappers.agents.base import Agent, AgentRequest, make_agent
from wrappers.agents.math_scripted import MathCoderAgent, solution_code

TASKS = 30


def play(agent: Agent, seeds: range, dataset: str = "arithmetic") -> list[dict]:
    """One episode per seed; the agent sees the prompt and the question, not the reference."""
    env = PromptWrapper(gym.make("ARLArena/TIRMath-v0", dataset=dataset))
    finals = []
    for seed in seeds:
        prompt, info = env.reset(seed=seed)
        done = False
        while not done:
            request = AgentRequest(prompt, {"task": info["task"]})
            prompt, _, terminated, truncated, info = env.step(agent.act([request])[0])
            done = terminated or truncated
        finals.append(info)
    return finals


def test_math_coder_solves_generated_arithmetic() -> None:
    finals = play(make_agent("math-coder"), range(TASKS))
    accuracy = sum(f["won"] for f in finals) / len(finals)
    assert accuracy >= 0.95, [(f["task"], f["prediction"], f["reference"]) for f in finals
                              if not f["won"]]
    assert all(f["tool_calls"] == 1 for f in finals)
    assert len({f["task_type"] for f in finals}) >= 8


def test_math_random_scores_about_zero() -> None:
    finals = play(make_agent("math-random", seed=3), range(TASKS))
    assert sum(f["won"] for f in finals) <= 2
    assert all(f["tool_calls"] == 0 and f["prediction"] is not None for f in finals)


def test_math_coder_gives_up_honestly_on_word_problems() -> None:
    train = gym.make("ARLArena/TIRMath-v0", dataset="train").unwrapped
    questions = []
    for seed in range(200):
        _, info = train.reset(seed=seed)
        if info["task_type"] == "gsm_symbolic":
            questions.append(info["task"])
    assert questions and all(solution_code(q) is None for q in questions)
    reply = MathCoderAgent().turn("User Question: " + questions[0], questions[0])
    assert "\\boxed{?}" in reply


def test_agents_are_registered_and_random_samples_differ() -> None:
    assert make_agent("math-coder").name == "math-coder"
    agent = make_agent("math-random", seed=0)
    requests = [AgentRequest("same prompt", sample=k) for k in range(4)]
    first = agent.act(requests)
    assert len(set(first)) > 1 and make_agent("math-random", seed=0).act(requests) == first
