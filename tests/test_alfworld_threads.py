"""ALFWorldEnv from several threads at once: each engine gives exactly the sequential episodes.

OpenRLHF's agent (and GEM, verifiers, SkyRL) constructs, resets and steps envs in
``asyncio.to_thread``. TextWorld parses with module-level parsers, which used to make
concurrent resets fail with ``IndexError('pop from empty list')``.
"""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from arlarena_envs.alfworld.env import ALFWorldEnv
from arlarena_envs.alfworld.generator import SPLIT_SIZES, sample_game

OOD = "eval_out_of_distribution"
THREADS = 8


def _small_games(count: int) -> list[int]:
    """Indices of out-of-distribution games in the two smallest rooms (bedroom, bathroom)."""
    small = [i for i in range(SPLIT_SIZES[OOD]) if sample_game(OOD, i).scene in (308, 424)]
    return small[:count]


def _episode(job: tuple[str, int, int, str, threading.Barrier | None]) -> list:
    """Build an env, reset it to a game and play 4 random admissible commands then 3 expert
    ones; return everything the agent saw."""
    engine, index, seed, cache, barrier = job
    env = ALFWorldEnv(split=OOD, cache_dir=cache, engine=engine)
    if barrier is not None:
        barrier.wait()  # every thread resets at the same moment
    obs, info = env.reset(seed=seed, options={"index": index})
    transcript = [obs, info["admissible_actions"], info["engine"]]
    rng = random.Random(seed)
    for step in range(7):
        action = rng.choice(info["admissible_actions"]) if step < 4 else env.expert_action()
        if action is None:
            break
        obs, reward, terminated, truncated, info = env.step(action)
        transcript.append((action, obs, reward, terminated, truncated, info["admissible_actions"]))
        if terminated:
            break
    env.close()
    return transcript


@pytest.mark.parametrize("engine", ["native", "textworld"])
def test_eight_concurrent_episodes_equal_sequential_play(engine, tmp_path):
    games = _small_games(2)
    # Two games, four episodes each: the same game in several threads is the GRPO case.
    jobs = [(engine, games[k % 2], 100 + k, str(tmp_path), None) for k in range(THREADS)]
    sequential = [_episode(job) for job in jobs]
    barrier = threading.Barrier(THREADS)
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        concurrent = list(pool.map(_episode, [(*job[:4], barrier) for job in jobs]))
    assert concurrent == sequential
    assert {t[2] for t in sequential} == {engine}
    assert len({t[0] for t in sequential}) == 2  # two different games were played
    assert len({repr(t) for t in sequential}) == THREADS  # and different episodes
