"""ARLArena/ALFWorld-Compact-v0 (the CPU recipe's variant), its compact prompt, the ALFWorld
content key and the recipe's panels: training, validation and held-out apart by content."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import arlarena_baselines.rollout.templates  # noqa: F401  (registers alfworld_compact)
import arlarena_envs  # noqa: F401
from arlarena_baselines.rollout.envs import EnvFactory
from arlarena_envs.alfworld.compact import VALIDATION_BUCKETS, CompactALFWorldEnv, part_indices
from arlarena_envs.alfworld.contentkey import content_key, info_key, spec_key
from arlarena_envs.alfworld.generator import SPLIT_SIZES, sample_game
from arlarena_envs.panels import data_dir, load_panel, panel_specs
from arlarena_envs.registration import ENV_SPECS
from wrappers import format_response
from wrappers.templates import render_prompt

COMPACT = "ARLArena/ALFWorld-Compact-v0"
EVAL_SPLITS = ("eval_in_distribution", "eval_out_of_distribution")


@pytest.fixture
def env(tmp_path):
    env = gym.make(COMPACT, cache_dir=tmp_path)
    yield env
    env.close()


def test_the_variant_is_registered_with_its_own_id_and_turn_cap(env):
    assert ENV_SPECS[COMPACT].max_episode_steps == 20
    assert ENV_SPECS["ARLArena/ALFWorld-v0"].max_episode_steps == 50  # the study's env as it was
    assert env.spec.id == COMPACT and isinstance(env.unwrapped, CompactALFWorldEnv)
    env.reset(seed=0)
    for turn in range(1, 21):  # "look" never wins: the cap ends the episode at turn 20
        _, reward, terminated, truncated, _ = env.step("look")
        assert (reward, terminated, truncated) == (0.0, False, turn == 20)


def test_seeds_walk_the_part_and_the_default_part_is_fit(env):
    fit = part_indices("train", "fit")
    _, info = env.reset(seed=5)
    assert (info["split"], info["game_index"]) == ("train", fit[5])
    _, again = env.reset(seed=5 + len(fit), options={"part": "fit"})
    assert again["game_index"] == fit[5]
    ood = part_indices("eval_out_of_distribution", "all")
    assert sorted(ood) == list(range(SPLIT_SIZES["eval_out_of_distribution"]))
    _, info = env.reset(seed=len(ood) + 2, options={"split": "eval_out_of_distribution"})
    assert info["game_index"] == ood[2]
    _, info = env.reset(seed=1, options={"split": "train", "index": 7})
    assert info["game_index"] == 7  # an explicit game still plays directly
    with pytest.raises(ValueError, match="no part 'validation'"):
        env.reset(seed=0, options={"split": "eval_in_distribution", "part": "validation"})


def test_task_type_keeps_to_the_part(env):
    _, info = env.reset(seed=3, options={"part": "validation", "task_type": "look_at_obj_in_light"})
    assert info["task_type"] == "look_at_obj_in_light"
    assert info["game_index"] in part_indices("train", "validation")


def test_the_content_key_hashes_scene_layout_and_goal_only():
    spec = sample_game("train", 11)
    moved = type(spec)(**{**spec.__dict__, "index": 99, "sentence": "other words",
                          "agent_location": "loc|0|0|0|30", "trial": "t",
                          "objects": tuple(reversed(spec.objects))})
    assert spec_key(moved) == spec_key(spec) == content_key("train", 11)
    other_goal = type(spec)(**{**spec.__dict__, "parent_target": "Nowhere"})
    other_scene = type(spec)(**{**spec.__dict__, "scene": spec.scene + 1})
    first = spec.objects[0]
    other_layout = type(spec)(**{**spec.__dict__, "objects": (
        type(first)(first.id, first.type, "Elsewhere|1"), *spec.objects[1:])})
    assert len({spec_key(s) for s in (spec, other_goal, other_scene, other_layout)}) == 4


def test_info_key_is_the_key_of_the_game_reset_played(env):
    _, info = env.reset(seed=4, options={"split": "eval_in_distribution"})
    assert info_key(info) == content_key("eval_in_distribution", info["game_index"])
    with pytest.raises(ValueError, match="only generated games"):
        info_key({**info, "source": "alfworld_data"})


def test_parts_are_apart_by_content_and_cover_the_split():
    keys = {split: {content_key(split, i) for i in range(SPLIT_SIZES[split])}
            for split in ("train", *EVAL_SPLITS)}
    held = keys["eval_in_distribution"] | keys["eval_out_of_distribution"]
    fit = {content_key("train", i) for i in part_indices("train", "fit")}
    validation = {content_key("train", i) for i in part_indices("train", "validation")}
    assert not fit & validation and not (fit | validation) & held
    assert all(int(k, 16) % VALIDATION_BUCKETS == 0 for k in validation)
    assert fit | validation == keys["train"] - held  # every other training game has a part


def _panel_keys(name: str) -> list[str]:
    """The content key of every task of a built panel (its ids are ``split/index``)."""
    ids = [task_id for task_id, _ in load_panel(name).tasks]
    return [content_key(*task_id.split("/")) for task_id in ids]


def test_the_recipe_panels_are_disjoint_by_content():
    specs = {n: s for n, s in panel_specs().items() if n.startswith("alfworld-compact-")}
    roles = {"train": ["alfworld-compact-bc", "alfworld-compact-train"],
             "validation": ["alfworld-compact-validation"],
             "heldout": ["alfworld-compact-heldout-id", "alfworld-compact-heldout-ood"]}
    assert sorted(specs) == sorted(n for names in roles.values() for n in names)
    keys = {role: {k for n in names for k in _panel_keys(n)} for role, names in roles.items()}
    assert not keys["train"] & keys["validation"]
    assert not keys["train"] & keys["heldout"] and not keys["validation"] & keys["heldout"]
    # Held-out games come from both eval splits, every game of each several times.
    for name, split in zip(roles["heldout"], EVAL_SPLITS, strict=True):
        ids = [task_id for task_id, _ in load_panel(name).tasks]
        assert {i.split("/")[0] for i in ids} == {split}
        assert len(ids) >= 512 and len(set(ids)) == SPLIT_SIZES[split]
    built = data_dir() / "panels" / "alfworld-compact-validation.json"
    assert json.loads(built.read_text())["definition"]["env"] == COMPACT


def test_the_compact_prompt_renders_what_the_env_shows(tmp_path):
    wrapped = EnvFactory(COMPACT, {"cache_dir": str(tmp_path)}, history_length=0,
                         template="alfworld_compact")()
    raw = wrapped.unwrapped
    prompt, info = wrapped.reset(seed=2, options={"split": "eval_out_of_distribution"})
    obs = raw._obs
    task = info["task"]
    assert prompt.startswith(f"ALFWorld. Task: {task}\nObservation: ")
    assert "Welcome to TextWorld" not in prompt and "Your task is to" not in prompt
    body = obs.partition("Your task is to: ")[0].removeprefix("-= Welcome to TextWorld, ALFRED! =-")
    assert " ".join(body.split()) in prompt  # the room as the env describes it
    assert f"Admissible actions: [{', '.join(info['admissible_actions'])}]." in prompt
    command = next(a for a in info["admissible_actions"] if a.startswith("go to"))
    later, reward, _, _, info = wrapped.step(format_response("", command))
    assert info["format_ok"] and reward == 0.0
    reply = raw._obs
    assert reply.startswith("You arrive at")
    assert f"Observation: {' '.join(reply.split())}\n" in later
    assert f"Admissible actions: [{', '.join(info['admissible_actions'])}]." in later
    assert "Prior to this step" not in prompt + later  # the recipe's history_length 0
    wrapped.close()
    shown = render_prompt("alfworld_compact", task=task, observation=reply, admissible=["look"],
                          history=[(obs, command)], step_count=1)
    assert f"Prior to this step: [Observation 1: '{' '.join(body.split())}', Action 1: " \
        f"'{command}']\nObservation: " in shown
