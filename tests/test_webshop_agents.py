"""The scripted WebShop agents through the prompt wrapper: well-formed answers, and the heuristic
scoring far above random clicking on the same eval instructions."""

from __future__ import annotations

import gymnasium as gym

import arlarena_envs  # noqa: F401  (registers the ids)
from wrappers.agents.base import AGENTS, Agent, AgentRequest, make_agent
from wrappers.agents.webshop_heuristic import (
    WebShopHeuristicAgent,
    WebShopRandomAgent,
    instruction_query,
    price_limit,
)
from wrappers.format import parse_response
from wrappers.prompt import PromptWrapper

EPISODES = 40


def _evaluate(agent: Agent, episodes: int) -> tuple[float, float]:
    env = PromptWrapper(gym.make("ARLArena/WebShop-Small-v0"))
    scores, wins = [], 0
    for index in range(episodes):
        prompt, info = env.reset(seed=index, options={"split": "eval", "index": index})
        done = False
        while not done:
            response = agent.act([AgentRequest(prompt, info, env)])[0]
            parsed = parse_response(response, info["admissible_actions"], lowercase=False)
            assert parsed.format_ok, (response, parsed.error)
            prompt, _, terminated, truncated, info = env.step(response)
            assert info["format_ok"]
            done = terminated or truncated
        scores.append(info["score"])
        wins += info["won"]
    return sum(scores) / episodes, wins / episodes


def test_agents_are_registered() -> None:
    assert AGENTS["webshop-heuristic"] is WebShopHeuristicAgent
    assert isinstance(make_agent("webshop-random", seed=3), WebShopRandomAgent)


def test_instruction_parsing() -> None:
    task = "i'm looking for a slim fit hoodie in size large, and price lower than 40.00 dollars"
    assert instruction_query(task) == "a slim fit hoodie in size large"
    assert price_limit(task) == 40.0 and price_limit("find me socks") is None


def test_heuristic_scores_far_above_random_clicking() -> None:
    heuristic_score, heuristic_success = _evaluate(WebShopHeuristicAgent(), EPISODES)
    random_score, random_success = _evaluate(WebShopRandomAgent(seed=0), EPISODES)
    assert heuristic_score >= 0.6 and heuristic_success >= 0.3
    assert random_score <= 0.3 and random_success <= 0.1
    assert heuristic_score - random_score >= 0.35
