"""PromptWrapper: templates, history, format penalty and the not-understood path."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import arlarena_envs  # noqa: F401
from arlarena_envs.sokoban.render import tiny_rgb_array
from wrappers import PromptWrapper, format_response
from wrappers.prompt import NOT_UNDERSTOOD
from wrappers.templates import TEMPLATES, render_prompt


def _env(**kwargs) -> PromptWrapper:
    return PromptWrapper(gym.make("ARLArena/Sokoban-v0"), **kwargs)


def test_first_prompt_has_no_history_and_shows_the_grid():
    env = _env()
    prompt, info = env.reset(seed=0)
    assert "Prior to this step" not in prompt
    grid = tiny_rgb_array(info["anchor"])
    assert "You are now at step 1 and your current observation is:\n" + grid in prompt
    assert prompt.endswith("present it within <action> </action> tags.")


def test_history_keeps_the_last_pairs_numbered_by_step():
    env = _env(history_length=2)
    env.reset(seed=0)
    observations = []
    for action in ("left", "up", "right"):
        obs, *_ , info = env.step(format_response("t", action))
        observations.append(tiny_rgb_array(info["anchor"]))
    assert "you have already taken 3 step(s)" in obs
    assert "Action 1:" not in obs
    assert f"[Observation 2: '{observations[0]}', Action 2: 'up']" in obs
    assert f"[Observation 3: '{observations[1]}', Action 3: 'right']" in obs
    assert "You are now at step 4" in obs


def test_zero_history_never_shows_pairs():
    env = _env(history_length=0)
    env.reset(seed=0)
    obs, *_ = env.step(format_response("t", "up"))
    assert "Prior to this step" not in obs and "You are now at step 2" in obs


def test_valid_response_gets_the_env_reward_unchanged():
    env = _env()
    env.reset(seed=0)
    _, reward, *_, info = env.step(format_response("plan", "up"))
    assert info["format_ok"] and info["parsed_action"] == "up"
    assert reward == pytest.approx(info["env_reward"])


def test_malformed_but_extractable_action_is_executed_with_a_penalty():
    env, twin = _env(), gym.make("ARLArena/Sokoban-v0")
    env.reset(seed=4)
    twin.reset(seed=4)
    expert = twin.unwrapped.expert_action()
    _, reward, *_, info = env.step(f"I'll move. <action>{expert.upper()}</action>")
    twin_obs, twin_reward, *_ = twin.step(expert)
    assert not info["format_ok"] and info["parsed_action"] == expert
    assert info["anchor"] == twin_obs
    assert reward == pytest.approx(twin_reward - 0.1)


def test_no_action_leaves_the_state_and_says_so():
    env = _env()
    _, info = env.reset(seed=1)
    obs, reward, terminated, _, new_info = env.step("\x00garbage" * 1000)
    assert new_info["anchor"] == info["anchor"]
    assert NOT_UNDERSTOOD in obs and not terminated
    assert reward == pytest.approx(-0.1 - 0.1)
    assert new_info["format_ok"] is False and new_info["parsed_action"] is None


def test_garbage_forever_still_hits_the_turn_limit():
    env = _env()
    env.reset(seed=1)
    for _ in range(14):
        assert not env.step("")[3]
    assert env.step("")[3]


def test_format_penalty_is_configurable():
    env = _env(format_penalty=0.5)
    env.reset(seed=1)
    assert env.step("nope")[1] == pytest.approx(-0.6)


def test_visual_variant_attaches_the_frame():
    env = PromptWrapper(gym.make("ARLArena/Sokoban-Visual-v0"))
    prompt, info = env.reset(seed=0)
    assert "<image>" in prompt and info["image"].shape == (96, 96, 3)


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped")
def test_wrapped_env_passes_check_env():
    check_env(_env(), skip_render_check=True)


def test_every_template_renders_both_turn_kinds():
    for name in TEMPLATES:
        first = render_prompt(name, task="T", observation="OBS", admissible=["a", "b"])
        later = render_prompt(name, task="T", observation="OBS", admissible=["a"],
                              history=[("o1", "a1")], step_count=1)
        assert "«" not in first + later and "»" not in first + later
        assert "T" in first and "{" not in first.replace("\\boxed{'", "")
        if name not in ("tir_math", "sokoban_visual"):
            assert TEMPLATES[name].show_observation("OBS") in first
        if name != "tir_math":
            assert "Prior to this step" in later
    with pytest.raises(KeyError, match="known"):
        render_prompt("chess", task="", observation="")


def test_negative_history_is_rejected():
    with pytest.raises(ValueError, match="history_length"):
        _env(history_length=-1)
