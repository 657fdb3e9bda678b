"""PromptWrapper: the study's prompts turn by turn (golden texts), the history, the format checks,
the penalty and the options (strict check, not-understood notice)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import arlarena_baselines.rollout.templates  # noqa: F401  (registers sokoban_compact)
import arlarena_envs  # noqa: F401
from arlarena_baselines.rollout.envs import EnvFactory
from arlarena_envs.alfworld.env import ALFWorldEnv
from arlarena_envs.webshop.textmode import without_instruction
from wrappers import PromptWrapper, format_response
from wrappers.prompt import NOT_UNDERSTOOD
from wrappers.templates import TEMPLATES, render_prompt

# The study's texts, written down from WillDreamer/ARLArena's agent_system/environments/, as its
# env_manager.py fills them. Each turn without history is the *_NO_HIS text, later turns the
# text with history; history lines follow memory/memory.py:89-97.

# prompts/sokoban.py:18-37, the same in SOKOBAN_TEMPLATE (48-67).
SOKOBAN_HEAD = (
    "\n"
    "You are an expert agent operating in the Sokoban environment.\n"
    "\n"
    "# Symbols and Their Meaning\n"
    "- Walls (`#`): These block movement. You can't move through or push anything into walls.\n"
    "- Floor (`_`): Open spaces where you can walk and move boxes.\n"
    "- Targets (`O`): The spots where boxes need to go.\n"
    "- Boxes (`X`): These are what you need to push onto the targets.\n"
    "- Player (`P`): That's you! You'll move around the grid to push boxes.\n"
    "- Box on Target (`√`): A box successfully placed on a target.\n"
    "- Player on Target (`S`): You standing on a target.\n"
    "\n"
    "# Your Goal\n"
    "Your goal is to push all the boxes (`X`) onto the target spots (`O`). Once all boxes are on "
    "the targets, you win!\n"
    "\n"
    "# Rules\n"
    "You can only push boxes. You can't pull them, so plan ahead to avoid getting stuck.\n"
    "You can't walk through or push boxes into walls (`#`).\n"
    "To avoid traps, do not push boxes into corners or against walls where they can't be moved "
    "again.\n"
    "\n"
    "# Current Step\n"
)
# prompts/sokoban.py:40-45, the same in 71-76 and 93-98 (the visual template).
SOKOBAN_TAIL = (
    'Your admissible actions are ["up", "down", "left", "right"].\n'
    "\n"
    "Now it's your turn to make a move (choose ONE action only for the current step).\n"
    "You should first reason step-by-step about the current situation — observe the positions "
    "of boxes and targets, plan a path to push a box toward a target, and avoid traps like "
    "corners or walls. This reasoning process MUST be enclosed within <think> </think> tags. \n"
    "Once you've finished your reasoning, you should choose an admissible action for current "
    "step and present it within <action> </action> tags.\n"
)
# prompts/sokoban.py:78-92.
SOKOBAN_VISUAL = (
    "\n"
    "You are an expert agent operating in the Sokoban environment. Your goal is to push all the "
    "boxes onto the target spots. Once all boxes are on the targets, you win!\n"
    "\n"
    "# Rules\n"
    "You can only push boxes. You can't pull them, so plan ahead to avoid getting stuck.\n"
    "You can't walk through or push boxes into walls.\n"
    "To avoid traps, do not push boxes into corners or against walls where they can't be moved "
    "again.\n"
    "\n"
    "# Visual Elements in the Image:\n"
    "Character: A small, green alien-like figure with two antennae and black eyes. It represents "
    "you.\n"
    'Box: A yellow crate marked with an orange "X" across its front. It is the box you need to '
    "push.\n"
    "Target: A black tile outlined in red, with a small red diamond shape in the center. It marks "
    "the destination where a box should be pushed.\n"
    "\n"
    "# Current Step\n"
    "Your current observation is shown in the image: <image>\n"
) + SOKOBAN_TAIL
# The "Prior to this step" line of prompts/sokoban.py:68 and prompts/alfworld.py:29 (typo
# included); prompts/webshop.py:34 spells "observations".
PRIOR = (
    "Prior to this step, you have already taken {n} step(s). Below are the most recent {n} "
    "{word} and the corresponding actions you took: {history}\n"
)
# prompts/alfworld.py:20-24 and 31-35.
ALFWORLD_TAIL = (
    "Your admissible actions of the current situation are: [{actions}].\n"
    "\n"
    "Now it's your turn to take an action.\n"
    "You should first reason step-by-step about the current situation. This reasoning process "
    "MUST be enclosed within <think> </think> tags. \n"
    "Once you've finished your reasoning, you should choose an admissible action for current "
    "step and present it within <action> </action> tags.\n"
)
# prompts/webshop.py:21-28 and 36-43.
WEBSHOP_TAIL = (
    "Your admissible actions of the current situation are: \n"
    "[\n"
    "{actions}\n"
    "].\n"
    "\n"
    "Now it's your turn to take one action for the current step.\n"
    "You should first reason step-by-step about the current situation, then think carefully "
    "which admissible action best advances the shopping goal. This reasoning process MUST be "
    "enclosed within <think> </think> tags. \n"
    "Once you've finished your reasoning, you should choose an admissible action for current "
    "step and present it within <action> </action> tags.\n"
)


def tiny(grid: str) -> str:
    """The study's env.py:12-21 and 124-126 text of a grid: " # \\t" per cell, rows on lines."""
    return "\n".join("".join(f" {c} \t" for c in row) for row in grid.split("\n"))


def history(pairs: list[tuple[str, str]]) -> str:
    return "\n".join(
        f"[Observation {k}: '{obs}', Action {k}: '{act}']" for k, (obs, act) in enumerate(pairs, 1)
    )


class Seen(gym.Wrapper):
    """Passes everything through and keeps the observations the env returned."""

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.seen = [obs]
        return obs, info

    def step(self, action):
        out = self.env.step(action)
        self.seen.append(out[0])
        return out


def _env(**kwargs) -> PromptWrapper:
    return PromptWrapper(gym.make("ARLArena/Sokoban-v0"), **kwargs)


# The study's level of seed 0 (tests/test_sokoban.py) after "left", then after "Still".
GRID_0 = "######\n#____#\n##O_P#\n###X_#\n###__#\n######"
GRID_1 = "######\n#____#\n##OP_#\n###X_#\n###__#\n######"


def test_sokoban_first_and_third_prompts_are_the_studys():
    env = _env()
    first, _ = env.reset(seed=0)
    # prompts/sokoban.py:38-39: the no-history text, no step count.
    assert first == SOKOBAN_HEAD + "Your current observation is:\n" + tiny(GRID_0) + "\n" + (
        SOKOBAN_TAIL
    )
    env.step(format_response("go left", "left"))
    third, *_ = env.step("I am not sure.")  # no <action>: the study's Still
    # prompts/sokoban.py:68-70; actions named as env_manager.py:251-257,291 names them.
    pairs = [(tiny(GRID_0), "Left"), (tiny(GRID_1), "Still")]
    assert third == SOKOBAN_HEAD + PRIOR.format(
        n=2, word="observaitons", history=history(pairs)
    ) + "You are now at step 3 and your current observation is:\n" + tiny(GRID_1) + "\n" + (
        SOKOBAN_TAIL
    )


def test_visual_sokoban_prompts_have_no_history_and_no_step_count():
    env = PromptWrapper(gym.make("ARLArena/Sokoban-Visual-v0"))
    first, info = env.reset(seed=0)
    env.step(format_response("go left", "left"))
    third, *_, later = env.step(format_response("go down", "down"))
    assert first == third == SOKOBAN_VISUAL  # env_manager.py:327-333 uses it unformatted
    assert info["image"].shape == later["image"].shape == (96, 96, 3)


def test_alfworld_first_and_third_prompts_are_the_studys(tmp_path):
    seen = Seen(ALFWorldEnv(split="eval_out_of_distribution", cache_dir=tmp_path))
    alfworld = PromptWrapper(seen)
    first, info = alfworld.reset(options={"index": 6})
    quoted = lambda info: "\n ".join(f"'{a}'" for a in info["admissible_actions"])  # noqa: E731
    # prompts/alfworld.py:17-25: no "Your task is to" line, no step count.
    assert first == (
        "\nYou are an expert agent operating in the ALFRED Embodied Environment.\n"
        f"Your current observation is: {seen.seen[0]}\n" + ALFWORLD_TAIL.format(
            actions=quoted(info)
        )
    )
    command = info["admissible_actions"][0]
    alfworld.step(format_response("look there", command))
    response = "I am not sure what to do here, so I wait."
    third, reward, _, _, info = alfworld.step(response)
    # No <action>: projection.py:38,77 executes the response's last 30 characters.
    assert info["parsed_action"] is None and reward == pytest.approx(-0.1)
    pairs = [(seen.seen[0], command), (seen.seen[1], response[-30:])]
    # prompts/alfworld.py:27-36.
    assert third == (
        "\nYou are an expert agent operating in the ALFRED Embodied Environment. Your task is to: "
        f"{info['task']}\n" + PRIOR.format(n=2, word="observaitons", history=history(pairs))
        + f"You are now at step 3 and your current observation is: {seen.seen[2]}\n"
        + ALFWORLD_TAIL.format(actions=quoted(info))
    )
    alfworld.close()


def test_webshop_first_and_third_prompts_are_the_studys():
    seen = Seen(gym.make("ARLArena/WebShop-Small-v0"))
    env = PromptWrapper(seen)
    first, info = env.reset(seed=0)
    listed = lambda info: "\n".join(f"'{a}'," for a in info["admissible_actions"])  # noqa: E731
    # The bare env shows its instruction on a first line; the study's prompt states it instead.
    assert seen.seen[0].startswith(f"Instruction: {info['task']}\n")
    shown = lambda k: without_instruction(seen.seen[k])  # noqa: E731
    # prompts/webshop.py:17-29 (a space ends its first line); env_manager.py:484 lists actions.
    assert first == (
        "\nYou are an expert autonomous agent operating in the WebShop e‑commerce environment. \n"
        f"Your task is to: {info['task']}.\nYour current observation is: {shown(0)}.\n"
        + WEBSHOP_TAIL.format(actions=listed(info))
    )
    env.step(format_response("find it", "search[Area Rug]"))
    response = "Let me think about which Product To Click"
    third, _, _, _, info = env.step(response)
    pairs = [(shown(0), "search[area rug]"), (shown(1), response[-30:])]
    # prompts/webshop.py:31-44.
    assert third == (
        "\nYou are an expert autonomous agent operating in the WebShop e‑commerce environment.\n"
        f"Your task is to: {info['task']}.\n"
        + PRIOR.format(n=2, word="observations", history=history(pairs))
        + f"You are now at step 3 and your current observation is: {shown(2)}.\n"
        + WEBSHOP_TAIL.format(actions=listed(info))
    )


def test_webshop_falls_back_to_no_history_past_13000_characters():
    kwargs = {"task": "buy a rug", "admissible": ["search[<your query>]"], "step_count": 2}
    page = lambda n: "'" + "x" * n + "'"  # noqa: E731
    short = render_prompt("webshop", observation="'Search'",
                          history=[(page(10), "a"), (page(10), "b")], **kwargs)
    base = len(short) - 20
    # env_manager.py:502-508: the history text is kept up to 13,000 characters.
    fits = render_prompt("webshop", observation="'Search'",
                         history=[(page(13_000 - base), "a"), (page(0), "b")], **kwargs)
    over = render_prompt("webshop", observation="'Search'",
                         history=[(page(13_001 - base), "a"), (page(0), "b")], **kwargs)
    assert len(fits) == 13_000 and "Prior to this step" in fits
    assert over == render_prompt("webshop", observation="'Search'", **kwargs)
    assert "Prior to this step" not in over and "You are now at step" not in over


def test_sokoban_compact_prompt_is_unchanged():
    # What wrappers/templates.py rendered for this grid before the study's templates came in.
    kwargs = {"task": "Push all the boxes onto the target spots.",
              "admissible": ["up", "down", "left", "right"]}
    spaced = "# # # # # #\n# _ _ _ _ #\n# # O _ P #\n# # # X _ #\n# # # _ _ #\n# # # # # #"
    head = ("Sokoban: Push all the boxes onto the target spots. Symbols: # wall, _ floor, O "
            "target, X box, P player, √ box on target, S player on target. ")
    tail = (" Grid:\n" + spaced + "\nAdmissible actions: [up, down, left, right]. Answer as "
            "<think>...</think><action>...</action>.")
    assert render_prompt("sokoban_compact", observation=GRID_0, **kwargs) == head + "Step 1." + (
        tail
    )
    later = render_prompt("sokoban_compact", observation=GRID_0, history=[(GRID_0, "left")],
                          step_count=1, **kwargs)
    assert later == head + f"Prior to this step: [Observation 1: '{spaced}', Action 1: 'left'] " + (
        "Step 2." + tail
    )


def test_history_keeps_the_last_pairs_numbered_by_step():
    env = _env(history_length=2)
    env.reset(seed=0)
    observations = []
    for action in ("left", "up", "right"):
        obs, *_, info = env.step(format_response("t", action))
        observations.append(tiny(info["anchor"]))
    assert "you have already taken 3 step(s)" in obs
    assert "Action 1:" not in obs
    assert f"[Observation 2: '{observations[0]}', Action 2: 'Up']" in obs
    assert f"[Observation 3: '{observations[1]}', Action 3: 'Right']" in obs
    assert "You are now at step 4" in obs


def test_zero_history_always_shows_the_no_history_text():
    env = _env(history_length=0)
    first, _ = env.reset(seed=0)
    later, *_, info = env.step(format_response("t", "up"))
    assert later == first.replace(tiny(GRID_0), tiny(info["anchor"]))
    assert "Prior to this step" not in later and "You are now at step" not in later


def test_valid_response_gets_the_env_reward_unchanged():
    env = _env()
    env.reset(seed=0)
    _, reward, *_, info = env.step(format_response("plan", "up"))
    assert info["format_ok"] and info["parsed_action"] == "up"
    assert info["format_check"] == "sokoban" and info["notice"] is False
    assert reward == pytest.approx(info["env_reward"])


def test_malformed_but_extractable_action_is_executed_with_a_penalty():
    env, twin = _env(), gym.make("ARLArena/Sokoban-v0")
    env.reset(seed=4)
    twin.reset(seed=4)
    expert = twin.unwrapped.expert_action()
    _, reward, *_, info = env.step(f"I'll move. <action>{expert.upper()}</action>")  # no think
    twin_obs, twin_reward, *_ = twin.step(expert)
    assert not info["format_ok"] and info["parsed_action"] == expert
    assert info["anchor"] == twin_obs
    assert reward == pytest.approx(twin_reward - 0.1)


def test_no_action_runs_the_studys_fallback_without_a_notice():
    env = _env()
    _, info = env.reset(seed=1)
    obs, reward, terminated, _, new_info = env.step("\x00garbage" * 1000)
    assert new_info["anchor"] == info["anchor"] and not new_info["action_is_valid"]
    assert NOT_UNDERSTOOD not in obs and not terminated and "Action 1: 'Still'" in obs
    assert reward == pytest.approx(-0.1 - 0.1)
    assert new_info["format_ok"] is False and new_info["parsed_action"] is None


def test_strict_check_and_notice_are_arlarenas_options():
    env = _env(format_check="strict", notice=True)
    env.reset(seed=1)
    _, _, _, _, info = env.step("<think>a</think><action>move up</action>")
    assert not info["format_ok"] and info["parsed_action"] == "move up"
    assert info["format_check"] == "strict" and not info["action_is_valid"]
    loose = _env()
    loose.reset(seed=1)
    assert loose.step("<think>a</think><action>move up</action>")[-1]["format_ok"]
    obs, *_, info = env.step("garbage")
    assert obs.count(NOT_UNDERSTOOD) == 1 and info["notice"] is True
    assert f"{NOT_UNDERSTOOD}\n{tiny(info['anchor'])}" in obs
    factory = EnvFactory("sokoban", format_check="strict", notice=True)()
    assert (factory.format_check, factory.notice) == ("strict", True)
    with pytest.raises(ValueError, match="check must be one of"):
        _env(format_check="lenient")


def test_strict_executes_nothing_without_an_action_block_even_if_the_tail_is_admissible():
    # The response's last 30 characters are an admissible WebShop search: the study's check
    # runs them (a results page), the strict one must run nothing (the search page stays).
    tail = "search[washable blue area rug]"
    response = "No tags this time, just: " + tail
    assert response[-30:] == tail
    pages = {}
    for check in ("study", "strict"):
        env = PromptWrapper(gym.make("ARLArena/WebShop-Small-v0"), format_check=check)
        _, before = env.reset(seed=0)
        _, reward, *_, info = env.step(response)
        assert info["parsed_action"] is None and reward == pytest.approx(-0.1)
        pages[check] = (before["page"], info["page"], info["action_is_valid"])
        env.close()
    assert pages["study"] == ("search", "results", True)
    assert pages["strict"] == ("search", "search", False)


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


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped")
def test_wrapped_env_passes_check_env():
    check_env(_env(), skip_render_check=True)


def test_every_template_renders_both_turn_kinds():
    for name in TEMPLATES:
        first = render_prompt(name, task="TASK", observation="OBS", admissible=["a", "b"])
        later = render_prompt(name, task="TASK", observation="OBS", admissible=["a"],
                              history=[("o1", "a1")], step_count=1)
        assert "«" not in first + later and "»" not in first + later
        assert "{" not in first.replace("\\boxed{'", "") + later.replace("\\boxed{'", "")
        if name not in ("tir_math", "sokoban_visual"):
            assert TEMPLATES[name].show_observation("OBS") in first
        if name not in ("tir_math", "sokoban_visual"):
            assert "Prior to this step" in later
    with pytest.raises(KeyError, match="known"):
        render_prompt("chess", task="", observation="")


def test_docs_show_every_study_text_verbatim():
    docs = (Path(__file__).resolve().parents[1] / "docs" / "prompts.md").read_text("utf-8")
    for name in ("alfworld", "webshop", "sokoban", "sokoban_visual"):
        for text in (TEMPLATES[name].text, TEMPLATES[name].later):
            assert text is None or f"```text\n{text.strip()}\n```" in docs, name


def test_negative_history_is_rejected():
    with pytest.raises(ValueError, match="history_length"):
        _env(history_length=-1)
