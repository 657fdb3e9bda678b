"""The envs as Gymnasium users and their tools meet them: vector envs with Gymnasium's defaults,
pickling and deep copies (Ray, multiprocessing, checkpoints), and what a bare env shows.

Every check runs on the four envs of the suite, made with ``gymnasium.make`` /
``gymnasium.make_vec`` as a user would make them.
"""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.spaces.utils import flatten, unflatten

import arlarena_envs  # noqa: F401  (registers the ids)
from arlarena_envs.base import TEXT_CHARSET, SharedTexts, text_space

ROOT = Path(__file__).resolve().parents[1]
CODE = "```python\nprint(6 * 7)\n```"
ENVS: dict[str, tuple[str, dict[str, Any], dict[str, Any], list[str]]] = {
    # name -> (id, make kwargs, reset options, actions: a few steps that keep the episode going)
    "sokoban": ("ARLArena/Sokoban-v0", {}, {}, ["up", "left", "dance", "down"]),
    "webshop": (
        "ARLArena/WebShop-Small-v0", {}, {"split": "eval"},
        ["search[rug]", "click[next >]", "click[back to search]", "search[shampoo]"],
    ),
    "alfworld": (
        "ARLArena/ALFWorld-v0", {"split": "eval_out_of_distribution"}, {},
        ["look", "inventory", "dance", "look"],
    ),
    "tir": (
        "ARLArena/TIRMath-v0",
        {"dataset": "arithmetic", "sandbox_limits": {"wall_time_s": 5.0, "cpu_time_s": 3}},
        {}, [CODE, "Again:\n" + CODE, CODE, CODE],
    ),
}


@pytest.fixture(scope="module", autouse=True)
def _cache(isolated_cache):
    """ALFWorld's generated games and the other caches go to a folder of this module."""


# -- vector envs -------------------------------------------------------------------------------
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(ENVS))
def test_make_vec_sync_and_async_with_gymnasiums_defaults(name: str) -> None:
    """Construction, reset, 3 steps and close in both modes; the async env's observations (through
    its shared memory, Gymnasium's default) are the sync env's, step by step."""
    env_id, kwargs, options, actions = ENVS[name]
    seen = {}
    for mode in ("sync", "async"):
        envs = gym.make_vec(env_id, num_envs=2, vectorization_mode=mode, **kwargs)
        try:
            if mode == "async":
                assert envs.shared_memory  # Gymnasium's default, kept
            obs, _ = envs.reset(seed=[3, 4], options=options)
            observations, rewards = [obs], []
            for action in actions[:3]:
                obs, reward, *_ = envs.step([action, action])
                observations.append(obs)
                rewards.append(reward.tolist())
        finally:
            envs.close()
        for obs in observations:
            assert isinstance(obs, tuple) and len(obs) == 2
            assert all(envs.single_observation_space.contains(o) for o in obs)
        seen[mode] = observations, rewards
    assert seen["async"] == seen["sync"]
    assert seen["sync"][0][0][0] != seen["sync"][0][0][1]  # two seeds, two episodes


def test_the_async_env_reads_live_shared_memory() -> None:
    """With ``copy=False`` the async env hands out its shared memory as a view (as it does numpy
    arrays): it follows the workers' writes, and its deep copy is a tuple of strings."""
    envs = gym.vector.AsyncVectorEnv(
        [lambda: gym.make("ARLArena/Sokoban-v0")] * 2, copy=False
    )
    try:
        view, _ = envs.reset(seed=[0, 1])
        assert isinstance(view, SharedTexts)
        first = copy.deepcopy(view)
        assert type(first) is tuple and first == tuple(view)
        envs.step(["up", "up"])
        envs.step(["left", "left"])
        stepped, *_ = envs.step(["down", "down"])
        assert stepped is view and tuple(view) != first  # the same view shows the new grids
    finally:
        envs.close()


def test_text_flattening_round_trips_and_the_character_list_is_never_built() -> None:
    space = text_space(64)
    text = "Grid:\n#_P\t\U0001f600 café 中文 ∑"
    flat = flatten(space, text)
    padding = [len(TEXT_CHARSET)] * (64 - len(text))
    assert flat.shape == (64,) and flat[len(text):].tolist() == padding
    assert unflatten(space, flat) == text
    assert [space.character_list[i] for i in flat[: len(text)]] == list(text)
    assert len(space.character_list) == len(TEXT_CHARSET)
    with pytest.raises(KeyError):
        flatten(space, "a\x00")
    space.seed(0)
    masked = space.sample(mask=(5, (np.arange(len(TEXT_CHARSET)) == 33).astype(np.int8)))
    assert masked == space.character_list[33] * 5


# -- pickling and deep copies ------------------------------------------------------------------
def _played(name: str) -> gym.Env:
    """The env of ``name`` after a reset and a few steps (the expert consulted where it plans)."""
    env_id, kwargs, options, actions = ENVS[name]
    env = gym.make(env_id, **kwargs)
    env.reset(seed=5, options=options)
    env.unwrapped.expert_action()  # ALFWorld's planner holds a Fast Downward library
    for action in actions[:2]:
        env.step(action)
    return env


def _next(env: gym.Env, action: str) -> tuple[Any, ...]:
    obs, reward, terminated, truncated, info = env.step(action)
    return obs, reward, terminated, truncated, info["anchor"], info["admissible_actions"]


@pytest.mark.parametrize("name", list(ENVS))
def test_pickle_and_deepcopy_give_the_same_next_observation(name: str) -> None:
    action = ENVS[name][3][2]
    original = _played(name)
    copies = [pickle.loads(pickle.dumps(original)), copy.deepcopy(original)]
    assert all(c.unwrapped is not original.unwrapped for c in copies)
    assert all(c.spec == original.spec for c in copies)
    expected = _next(original, action)
    for twin in copies:
        assert _next(twin, action) == expected
        twin.close()
    original.close()


def test_a_pickled_env_rebuilds_its_resources_in_a_fresh_process(tmp_path: Path) -> None:
    """What Ray and multiprocessing do: unpickle in another interpreter, where no shop, sandbox
    or planner exists yet, and step on."""
    envs = {name: _played(name) for name in ENVS}
    payload = {name: (env, ENVS[name][3][2]) for name, env in envs.items()}
    (tmp_path / "envs.pkl").write_bytes(pickle.dumps(payload))
    script = (
        "import pickle, sys\n"
        "payload = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "out = {name: env.step(action)[0] for name, (env, action) in payload.items()}\n"
        "open(sys.argv[2], 'wb').write(pickle.dumps(out))\n"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "envs.pkl"),
                    str(tmp_path / "out.pkl")], check=True, cwd=ROOT, timeout=600)
    there = pickle.loads((tmp_path / "out.pkl").read_bytes())
    for name, env in envs.items():
        assert there[name] == env.step(ENVS[name][3][2])[0], name
        env.close()


def test_a_copied_tir_episode_keeps_its_outputs_without_running_code_again() -> None:
    """TIR Math carries its transcript: a program whose output changes from run to run shows the
    same output in the copy (a replay would print new numbers)."""
    env_id, kwargs, _, _ = ENVS["tir"]
    env = gym.make(env_id, **kwargs)
    env.reset(seed=0)
    env.step("```python\nimport random\nprint(random.random())\n```")
    copies = [pickle.loads(pickle.dumps(env)), copy.deepcopy(env)]
    expected = _next(env, CODE)
    for twin in copies:
        assert _next(twin, CODE) == expected


def test_an_env_pickled_before_reset_comes_back_fresh_and_keeps_its_rng() -> None:
    env = gym.make("ARLArena/Sokoban-v0")
    fresh = pickle.loads(pickle.dumps(env))
    assert fresh.reset(seed=7) == env.reset(seed=7)
    env.reset()  # a seedless reset draws from the env's RNG: the copy draws the same
    twin = pickle.loads(pickle.dumps(env))
    assert twin.reset() == env.reset() and twin.reset() == env.reset()


# -- what a bare env shows ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["webshop", "alfworld", "tir"])
def test_the_first_observation_of_a_bare_env_shows_its_task(name: str) -> None:
    """A user who skips ``PromptWrapper`` reads the observation: it holds the task. (Sokoban's
    task is the level, which its observation is; its ``info["task"]`` is the game's rule.)"""
    env_id, kwargs, options, _ = ENVS[name]
    env = gym.make(env_id, **kwargs)
    for seed in (0, 1):
        obs, info = env.reset(seed=seed, options=options)
        assert info["task"] and info["task"] in obs
    env.close()
