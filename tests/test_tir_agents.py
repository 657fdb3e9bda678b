"""Expert-free smoke test of TIR Math: scripted agents through the real env, sandbox and prompts."""

from __future__ import annotations

import gymnasium as gym
import pytest

import arlarena_envs  # noqa: F401  (registers the ids)
from tests.chat_server import ChatServer
from wrappers import PromptWrapper
from wrappers.agents.base import Agent, AgentRequest, make_agent
from wrappers.agents.continuation import continuation_of
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
    assert all(f["turns"] == 2 for f in finals)
    assert len({f["task_type"] for f in finals}) >= 8


def test_math_random_scores_about_zero() -> None:
    finals = play(make_agent("math-random", seed=3), range(TASKS))
    assert sum(f["won"] for f in finals) <= 2
    assert all(f["turns"] == 1 and f["prediction"] is not None for f in finals)


def test_a_scripted_episode_has_the_studys_shape() -> None:
    """One continuing response: cut after its first block, the execution result appended, the
    end on a printed box; the user prompt never changes and the response so far follows it."""
    env = PromptWrapper(gym.make("ARLArena/TIRMath-v0", dataset="arithmetic"))
    agent = MathCoderAgent()
    prompt, info = env.reset(seed=4)
    question, user = info["task"], prompt
    script = solution_code(question)
    replies, transcripts = [], []
    done = False
    while not done:
        request = AgentRequest(prompt, info)
        assert continuation_of(request) == (user, info["response_prefix"])
        replies.append(agent.act([request])[0])
        prompt, reward, terminated, truncated, info = env.step(replies[-1])
        transcripts.append(info["response_prefix"])
        done = terminated or truncated
    first = f"I will compute the answer with Python.\n```python\n{script}\n```"
    assert replies[0] == first + "\nOnce it has run, I will report the result."
    assert transcripts[0] == first + "\nCode execution result: 1380\n\n"
    second = "The script printed the answer.\n```python\nfinal_answer('1380')\n```"
    assert transcripts[1] == transcripts[0] + second + "\nCode execution result: \\boxed{1380}\n\n"
    assert prompt == user + transcripts[1]
    assert (reward, terminated, info["won"], info["turns"]) == (1.0, True, True, 2)


@pytest.mark.usefixtures("isolated_cache")
@pytest.mark.parametrize("continuation", ["completion", "chat"])
def test_an_api_model_continues_its_response(continuation: str) -> None:
    """``completion``: the first user message in the model's chat format, then the response so
    far, sent to ``/completions``; ``chat``: the whole prompt as one user message."""
    from arlarena_baselines.trainer.models import smollm2_tokenizer

    tokenizer = smollm2_tokenizer()
    env = PromptWrapper(gym.make("ARLArena/TIRMath-v0", dataset="arithmetic"))
    prompt, info = env.reset(seed=4)
    user, question = prompt, info["task"]
    coder = MathCoderAgent()
    with ChatServer(lambda messages: coder.turn(messages[-1]["content"], question)) as server:
        agent = make_agent("openai", model="test-model", base_url=server.base_url, api_key="k",
                           continuation=continuation, chat_template=tokenizer)
        prefixes, done = [], False
        while not done:
            prefixes.append(info["response_prefix"])
            reply = agent.act([AgentRequest(prompt, info)])[0]
            prompt, reward, terminated, truncated, info = env.step(reply)
            done = terminated or truncated
        agent.close()
    assert reward == 1.0 and info["turns"] == 2
    assert prefixes[1].endswith("Code execution result: 1380\n\n")
    if continuation == "completion":
        chat = tokenizer.apply_chat_template([{"role": "user", "content": user}],
                                             add_generation_prompt=True, tokenize=False)
        assert [r["prompt"] for r in server.requests] == [chat + p for p in prefixes]
        assert not any("messages" in r for r in server.requests)
    else:
        assert [r["messages"] for r in server.requests] == [
            [{"role": "user", "content": user + p}] for p in prefixes]


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
