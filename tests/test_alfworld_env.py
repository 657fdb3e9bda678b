"""ALFWorldEnv: observations, admissible commands, hostile input, options, reproducibility, both
engines giving the same episodes, ALFWorld's own AlfredTWEnv on our games, the original-data
source and the gymnasium contract."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import arlarena_envs
from arlarena_envs.alfworld.env import NOTHING_HAPPENS, WIN_REWARD, ALFWorldEnv
from arlarena_envs.alfworld.generator import TASK_TYPES, sample_game, task_indices
from arlarena_envs.alfworld.problem import write_game
from arlarena_envs.alfworld.scenes import UNSEEN_SCENES
from wrappers.format import format_response
from wrappers.prompt import PromptWrapper

OOD = "eval_out_of_distribution"
BEDROOM_SIMPLE, BATHROOM_CLEAN = 7, 0  # small OOD games (FloorPlan308 / FloorPlan424)


@pytest.fixture(scope="module")
def cache(module_tmp):
    return module_tmp("alfworld-cache")


@pytest.fixture(scope="module")
def env(cache):
    env = ALFWorldEnv(split=OOD, cache_dir=cache)
    yield env
    env.close()


def test_intro_task_and_admissible_commands_are_alfworlds(env):
    obs, info = env.reset(options={"index": BEDROOM_SIMPLE})
    spec = sample_game(OOD, BEDROOM_SIMPLE)
    header, room, task = obs.split("\n\n")
    assert header == "-= Welcome to TextWorld, ALFRED! =-"
    assert room.startswith("You are in the middle of a room. Looking quickly around you, you "
                           "see a ")
    assert task == f"Your task is to: {spec.sentence}."
    assert info["task"] == f"{spec.sentence}." and info["anchor"] == obs
    assert info["task_type"] == spec.task_type == "pick_and_plac_simple".replace("plac", "place")
    assert info["won"] is False and "action_is_valid" not in info
    actions = info["admissible_actions"]
    assert actions == sorted(actions) and "help" not in actions
    assert {"look", "inventory"} <= set(actions)
    goes = [a for a in actions if a.startswith("go to ")]
    assert len(goes) == len(spec.scene_data.receptacles)
    assert all(f"a {a.removeprefix('go to ')}" in room for a in goes)


def test_commands_change_the_state_as_alfworld_does(env):
    obs, info = env.reset(options={"index": BATHROOM_CLEAN})
    spec = sample_game(OOD, BATHROOM_CLEAN)
    closed = next(a for a in info["admissible_actions"] if a.startswith("go to cabinet"))
    obs, reward, terminated, truncated, info = env.step(closed)
    name = closed.removeprefix("go to ")
    assert obs == f"You arrive at {name}. The {name} is closed."
    assert (reward, terminated, truncated, info["action_is_valid"]) == (0.0, False, False, True)
    assert f"open {name}" in info["admissible_actions"]
    obs, *_, info = env.step(f"open {name}")
    assert obs.startswith(f"You open the {name}. The {name} is open. In it, you see ")
    obs, *_, info = env.step("inventory")
    assert obs == "You are not carrying anything."
    assert spec.task_type == "pick_clean_then_place_in_recep"


def test_hostile_or_inadmissible_actions_change_nothing(env):
    _obs0, info0 = env.reset(options={"index": BEDROOM_SIMPLE})
    hostile = [None, b"\xff\xfe\x00go", "x" * 1_000_000, 12345, "", "   ", "help", "go to",
               "go to the moon", "take everything", "\x00\x1b[2J", "🙂🙂", ["go to desk 1"],
               {"cmd": "look"}, "look; rm -rf /", "<action>look</action>"]
    for action in hostile:
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs == NOTHING_HAPPENS == info["anchor"]
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert info["action_is_valid"] is False
        assert info["admissible_actions"] == info0["admissible_actions"]
    target = info0["admissible_actions"][0]
    obs, *_, info = env.step("  " + target.upper().replace(" ", "   ") + "\n")
    assert info["action_is_valid"] is True and obs.startswith("You arrive at ")


def test_expert_episode_wins_with_reward_ten(env):
    env.reset(options={"index": BATHROOM_CLEAN})
    rewards = []
    for _ in range(50):
        _, reward, terminated, _, info = env.step(env.expert_action())
        rewards.append(reward)
        if terminated:
            break
    assert info["won"] is True and rewards[-1] == WIN_REWARD and set(rewards[:-1]) == {0.0}
    assert env.expert_action() is None
    _obs, reward, terminated, _, info = env.step(info["admissible_actions"][0])
    assert (reward, terminated, info["action_is_valid"]) == (0.0, True, False)


def test_resetting_the_same_game_reuses_its_compiled_game(env):
    first, _ = env.reset(options={"index": BATHROOM_CLEAN})
    compiled = env._engine().game
    env.step(env.expert_action())
    again, info = env.reset(options={"index": BATHROOM_CLEAN})
    assert again == first and env._engine().game is compiled and info["engine"] == "native"
    other = ALFWorldEnv(split=OOD, cache_dir=env.cache_dir)  # another env of the process
    assert other.reset(options={"index": BATHROOM_CLEAN})[0] == first
    assert other._engine().game is compiled
    other.close()


def test_textworld_engine_reuses_its_translation(cache):
    import fast_downward

    env = ALFWorldEnv(split=OOD, cache_dir=cache, engine="textworld")
    first, info = env.reset(options={"index": BATHROOM_CLEAN})
    assert info["engine"] == "textworld"
    translations = fast_downward.pddl2sas.arlarena_cache
    problem = json.loads(Path(info["gamefile"]).read_text())["pddl_problem"]
    before = list(translations)
    assert {(p, o) for _, p, o in before if p == problem} == {(problem, False), (problem, True)}
    env.step(env.expert_action())
    again, _ = env.reset(options={"index": BATHROOM_CLEAN})
    assert again == first
    assert sorted(translations) == sorted(before)  # only cache hits: nothing new was translated
    env.close()


def test_both_engines_play_the_same_episode(cache):
    """Observations, rewards, termination and every info key but ``engine``, step by step,
    for random, hostile and expert commands."""
    envs = {name: ALFWorldEnv(split=OOD, cache_dir=cache, engine=name)
            for name in ("native", "textworld")}
    seen = {name: [env.reset(seed=5, options={"index": BEDROOM_SIMPLE})] for name, env in
            envs.items()}
    rng = random.Random(5)
    actions = ["help", "GO TO  " + seen["native"][0][1]["admissible_actions"][0], "dance", None]
    for step in range(30):
        info = seen["native"][-1][-1]
        if step < len(actions):
            action = actions[step]
        elif step < 8:
            action = rng.choice(info["admissible_actions"])
        else:
            action = envs["native"].expert_action()
            assert action == envs["textworld"].expert_action()
        for name, env in envs.items():
            seen[name].append(env.step(action))
        if seen["native"][-1][2]:
            break
    assert seen["native"][-1][2] and seen["native"][-1][1] == WIN_REWARD
    for native, textworld in zip(seen["native"], seen["textworld"], strict=True):
        assert native[:-1] == textworld[:-1]
        assert native[-1].pop("engine") == "native" and textworld[-1].pop("engine") == "textworld"
        assert native[-1] == textworld[-1]
    for env in envs.values():
        env.close()


def test_alfworlds_own_alfredtwenv_plays_our_games_as_the_env_does(tmp_path):
    from alfworld.agents.environment.alfred_tw_env import AlfredTWEnv

    env = ALFWorldEnv(split=OOD, cache_dir=tmp_path)
    _, info = env.reset(options={"index": BEDROOM_SIMPLE})
    config = {
        "env": {"goal_desc_human_anns_prob": 0, "task_types": [1, 2, 3, 4, 5, 6],
                "domain_randomization": False, "expert_type": "planner"},
        "dataset": {"data_path": "", "eval_id_data_path": "", "num_train_games": -1,
                    "eval_ood_data_path": str(Path(info["gamefile"]).parents[2]),
                    "num_eval_games": -1},
        "general": {"training_method": "dagger"},
        "dagger": {"training": {"max_nb_steps_per_episode": 50}},
    }
    alfred = AlfredTWEnv(config, train_eval="eval_out_of_distribution")
    assert alfred.game_files == [info["gamefile"]]  # it finds our game and calls it solvable
    tw_env = alfred.init_env(batch_size=1)
    try:
        obs, infos = tw_env.reset()
        ours, info = env.reset(options={"index": BEDROOM_SIMPLE})
        assert infos["extra.gamefile"][0] == info["gamefile"]
        for step in range(8):
            assert obs[0] == ours, step
            assert list(infos["admissible_commands"][0]) == sorted(
                info["admissible_actions"] + ["help"]), step
            if info["won"]:
                break
            command = env.expert_action() if step >= 3 else info["admissible_actions"][step]
            obs, _, dones, infos = tw_env.step([command])
            ours, _, terminated, _, info = env.step(command)
            assert bool(dones[0]) == terminated and bool(infos["won"][0]) == info["won"]
        assert info["won"]
    finally:
        tw_env.close()
        env.close()


def test_seed_picks_the_same_game_on_two_envs(tmp_path):
    first, second = (ALFWorldEnv(split=OOD, task_type="look_at_obj_in_light",
                                 cache_dir=tmp_path / name) for name in ("a", "b"))
    obs_a, info_a = first.reset(seed=11)
    obs_b, info_b = second.reset(seed=11)
    assert obs_a == obs_b and info_a["game_index"] == info_b["game_index"]
    assert info_a["gamefile"].startswith(str(tmp_path / "a"))
    assert info_a["gamefile"].replace(str(tmp_path / "a"), str(tmp_path / "b")) == \
        info_b["gamefile"]
    assert Path(info_a["gamefile"]).read_bytes() == Path(info_b["gamefile"]).read_bytes()
    for seed in range(12, 20):  # another seed reaches another game (18 games to draw from)
        if first.reset(seed=seed)[1]["game_index"] != info_a["game_index"]:
            break
    else:
        pytest.fail("seeds 12-19 all drew the game of seed 11")


def test_options_pick_split_task_type_and_index(env):
    _, info = env.reset(options={"split": "valid_unseen", "task_type": "look_at_obj_in_light",
                                 "index": 1})
    assert info["split"] == OOD and info["task_type"] == "look_at_obj_in_light"
    assert info["game_index"] == task_indices(OOD, "look_at_obj_in_light")[1]
    assert int(info["gamefile"].split("/")[-3].rsplit("-", 1)[1]) in UNSEEN_SCENES
    for bad, message in (
        ({"split": "test"}, "unknown split 'test'"),
        ({"index": 10_000}, rf"game index 10000 out of range for {OOD} \(134 games\)"),
        ({"task_type": "juggle"}, "unknown task type 'juggle'"),
        ({"source": "internet"}, "unknown game source 'internet'"),
        ({"index": -1}, rf"game index -1 out of range for {OOD} "),
    ):
        with pytest.raises(ValueError, match=message):
            env.reset(options=bad)
    with pytest.raises(ValueError, match="unknown split 'nope'"):
        ALFWorldEnv(split="nope")
    with pytest.raises(ValueError, match="unknown engine"):
        ALFWorldEnv(engine="textworld2")


def _real_layout(root, specs):
    base = root / "json_2.1.1" / "valid_seen"
    paths = [write_game(spec, base) for spec in specs]
    movable = base / "pick_and_place_with_movable_recep-Pen-Mug-Desk-308" / "trial_x"
    shutil.copytree(paths[0].parent, movable)
    unsolvable = base / paths[1].parent.parent.name / "trial_unsolvable"
    shutil.copytree(paths[1].parent, unsolvable)
    data = json.loads((unsolvable / "game.tw-pddl").read_text())
    (unsolvable / "game.tw-pddl").write_text(json.dumps({**data, "solvable": False}))
    return paths


def test_original_data_source_loads_games_in_alfworlds_layout(tmp_path, monkeypatch, env):
    specs = [sample_game(OOD, BEDROOM_SIMPLE), sample_game(OOD, BATHROOM_CLEAN)]
    paths = _real_layout(tmp_path / "alfworld_data", specs)
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path / "alfworld_data"))
    data_env = ALFWorldEnv(source="alfworld_data", split="eval")
    assert data_env.games().count("eval_in_distribution") == 2
    obs, info = data_env.reset(options={"index": 0})  # sorted paths: pick_and_place... first
    assert info["source"] == "alfworld_data" and info["gamefile"] == str(paths[0])
    assert info["engine"] == "textworld"  # the original games always play on TextWorld
    generated_obs, _ = env.reset(options={"index": BEDROOM_SIMPLE})
    assert obs == generated_obs
    for _ in range(50):
        obs, reward, terminated, *_ = data_env.step(data_env.expert_action())
        if terminated:
            break
    assert reward == WIN_REWARD
    # a generated env can switch to the original data per reset, too
    _, info = env.reset(options={"source": "alfworld_data", "split": "valid_seen", "index": 1})
    assert info["gamefile"] == str(paths[1]) and info["task_type"] in TASK_TYPES
    with pytest.raises(FileNotFoundError, match="alfworld-download"):
        ALFWorldEnv(source="alfworld_data", data_dir=tmp_path / "empty").reset()


def test_registration_and_prompt_wrapper(cache):
    env = gym.make("ARLArena/ALFWorld-v0", split=OOD, task_type="look_at_obj_in_light",
                   cache_dir=str(cache))
    assert env.spec.max_episode_steps == 50 and arlarena_envs.resolve_env_id("alfworld") == \
        "ARLArena/ALFWorld-v0"
    assert env.unwrapped.prompt_template == "alfworld"
    wrapped = PromptWrapper(env)
    prompt, info = wrapped.reset(seed=3)
    assert f"Your task is to: {info['task']}" in prompt and "'inventory'" in prompt
    action = env.unwrapped.expert_action()
    _, _, _, _, info = wrapped.step(format_response("I should look for it.", action))
    assert info["format_ok"] and info["action_is_valid"] and info["parsed_action"] == action
    env.close()


@pytest.mark.slow
def test_check_env_passes(cache):
    env = gym.make("ARLArena/ALFWorld-v0", split=OOD, task_type="look_at_obj_in_light",
                   cache_dir=str(cache), render_mode="ansi")
    check_env(env.unwrapped, skip_render_check=False)
    env.close()
