"""ALFWorld's planner expert: it solves games of every type and split, its plans are as short
as TextWorld's own full-game plans, it recovers from detours, and a random agent rarely wins."""

from __future__ import annotations

import sys
import warnings

import pytest

from arlarena_envs.alfworld.env import ALFWorldEnv
from arlarena_envs.alfworld.generator import TASK_TYPES
from arlarena_envs.alfworld.policies import expert_policy, random_admissible_policy, run_policy
from arlarena_envs.alfworld.scenes import SPLITS

OOD = "eval_out_of_distribution"


@pytest.fixture(scope="module")
def env(module_tmp):
    env = ALFWorldEnv(cache_dir=module_tmp("alfworld-cache"))
    yield env
    env.close()


@pytest.mark.slow
def test_expert_solves_two_games_of_each_task_type(env):
    # 12 games: task type i of game j comes from split (i + j) % 3, so every split is used.
    results = [
        run_policy(env, expert_policy,
             options={"split": SPLITS[(i + j) % 3], "task_type": task_type, "index": j})
        for i, task_type in enumerate(TASK_TYPES) for j in range(2)
    ]
    failures = [(r.split, r.index, r.last_observation) for r in results if not r.won]
    assert not failures
    assert {r.task_type for r in results} == set(TASK_TYPES)
    assert all(r.steps <= 15 for r in results)


def _textworld_plan(gamefile: str) -> list[str]:
    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

    infos = textworld.EnvInfos(admissible_commands=True, policy_commands=True)
    with warnings.catch_warnings():  # TextWorld leaves the game file for the GC to close
        warnings.simplefilter("ignore", ResourceWarning)
        tw = textworld.start(gamefile, infos, [AlfredDemangler(shuffle=False), AlfredInfos])
    plan = list(tw.reset()["policy_commands"])
    tw.close()
    return plan


@pytest.mark.parametrize("index", [0, 7])  # small OOD rooms: TextWorld's full replan is quick
def test_expert_plans_are_as_short_as_textworlds_own(env, index):
    _, info = env.reset(options={"split": OOD, "index": index})
    reference = _textworld_plan(info["gamefile"])
    result = run_policy(env, expert_policy, options={"split": OOD, "index": index})
    assert result.won and reference and result.steps == len(reference)


def test_expert_recovers_after_a_detour_holding_something_else(env):
    _, info = env.reset(options={"split": OOD, "index": 12})  # two hand towels, a garbage can
    assert info["task"].startswith("find two handtowel")
    env.expert_action()
    held = None
    for go in [a for a in info["admissible_actions"] if a.startswith("go to")]:
        _, _, _, _, info = env.step(go)
        take = next((a for a in info["admissible_actions"]
                     if a.startswith("take ") and "handtowel" not in a), None)
        if take:
            _, _, _, _, info = env.step(take)
            held = take.split()[1:3]
            break
    assert held, "no unrelated object lies in the open in this room"
    assert env.step("inventory")[0] == f"You are carrying: a {' '.join(held)}."
    for _ in range(30):
        _, reward, terminated, _, info = env.step(env.expert_action())
        if terminated:
            break
    assert info["won"] and reward == 10.0


@pytest.mark.slow
def test_random_admissible_agent_rarely_wins(env):
    results = [run_policy(env, random_admissible_policy(seed), options={"split": OOD, "index": i})
               for seed, i in enumerate((0, 1, 7, 10, 11, 12))]
    assert all(r.steps == 50 or r.won for r in results)
    assert sum(r.won for r in results) <= 2


def _downward_copies() -> set[str]:
    """The copies of Fast Downward's library this process has mapped (each load maps a fresh
    copy, whose deleted file keeps its ~28 MB of disk while mapped)."""
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return {line.split(maxsplit=5)[-1].strip() for line in maps
                if "libdownward.so" in line and "site-packages" not in line}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_the_expert_maps_one_planner_library_however_many_games_it_plays(env):
    before = _downward_copies()
    for index in (3, 4, 5):  # a planner per game
        run_policy(env, expert_policy,
                   options={"split": "eval_out_of_distribution", "index": index})
    assert len(_downward_copies() - before) <= 1
