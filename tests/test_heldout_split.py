"""The trainer's default held-out tasks share no content with the tasks training can draw.

For every env with held-out tasks, the default evaluation of ``arlarena train rl`` (and of
``train compare`` and the arena, which use the same :func:`eval_config`) plays tasks whose
content (what :data:`arlarena_envs.panels.content.CONTENT` hashes) never comes up in training.
Before the content split, Sokoban's held-out seeds 1,000,000 + i were levels any training seed
could draw, and TIR Math's were training problems i (the training set has 10^6 of them).
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import arlarena_envs
from arlarena_baselines.trainer.config import TrainConfig, apply_overrides
from arlarena_baselines.trainer.envs import eval_config, heldout_source, training_options
from arlarena_envs.panels.content import task_content, task_hash


def _config(env: str, *overrides: str) -> TrainConfig:
    return apply_overrides(TrainConfig(), [f"rollout.env={env}", *overrides])


def _hashes(env_id: str, seeds, options, kwargs=None) -> dict[int, str]:
    family = gym.spec(env_id).entry_point.split(".")[1]
    env = gym.make(env_id, **(kwargs or {}))
    try:
        return {s: task_hash(task_content(env, family, s, options)[1]) for s in seeds}
    finally:
        env.close()


def _heldout(config: TrainConfig) -> dict[int, str]:
    run = eval_config(config)
    env_id = arlarena_envs.resolve_env_id(run.env)
    return _hashes(env_id, range(run.seed, run.seed + run.episodes), run.reset_options)


@pytest.mark.parametrize("env", ["ARLArena/Sokoban-v0", "ARLArena/Sokoban-6x6-2b-v0"])
def test_sokoban_heldout_levels_are_never_training_levels(env):
    config = _config(env)
    heldout = _heldout(config)
    assert len(set(heldout.values())) > config.eval.episodes * 3 // 4
    # Training may draw any seed, the held-out seeds themselves included.
    seeds = [*range(300), *heldout]
    training = _hashes(env, seeds, training_options(config))
    assert not set(heldout.values()) & set(training.values())
    # By the level's content without the player: the split is by room, not by start.
    from arlarena_envs.sokoban.split import is_heldout, level_key

    raw = gym.make(env).unwrapped
    keys = {}
    for split, where in (("eval", heldout), ("train", seeds)):
        found = set()
        for seed in where:
            raw.reset(seed=seed, options={"split": split})
            assert is_heldout(raw.level) == (split == "eval")
            found.add(level_key(raw.level))
        keys[split] = found
    assert not keys["eval"] & keys["train"]
    assert "held-out split" in heldout_source(config)


def test_sokoban_all_split_keeps_the_studys_levels():
    """``split: all`` (the env's default) shows the level each seed generates, held out or not."""
    from arlarena_envs.sokoban.split import is_heldout

    env = gym.make("ARLArena/Sokoban-v0").unwrapped
    kinds = set()
    for seed in range(64):
        grid, _ = env.reset(seed=seed)
        assert env.reset(seed=seed, options={"split": "all"})[0] == grid
        kinds.add(is_heldout(env.level))
    assert kinds == {True, False}


@pytest.mark.parametrize("env_id", ["ARLArena/WebShop-Small-v0", "ARLArena/WebShop-v0"])
def test_webshop_heldout_goals_are_never_training_goals(env_id):
    """Every goal of the training split (all of them: training can draw any) against the
    default held-out goals, by goal content (product, options, attributes, instruction)."""
    from arlarena_envs.webshop.shop import ShopConfig, get_shop

    config = _config(env_id)
    run = eval_config(config)
    assert run.reset_options == {"split": "eval"}
    products = gym.spec(env_id).kwargs.get("products")
    shop = get_shop(ShopConfig(products=products))

    def key(goal) -> tuple:
        return (goal.asin, tuple(goal.options), tuple(goal.attributes), goal.instruction)

    training = {key(shop.goal(training_options(config)["split"], i))
                for i in range(shop.split_size("train"))}
    env = gym.make(env_id)
    try:
        heldout = []
        for seed in range(run.seed, run.seed + run.episodes):
            env.reset(seed=seed, options=run.reset_options)
            goal = env.unwrapped._goal
            heldout.append((goal["asin"], tuple(map(tuple, goal["options"])),
                            tuple(goal["attributes"]), goal["instruction"]))
    finally:
        env.close()
    assert len(heldout) == config.eval.episodes
    assert not set(heldout) & training
    assert not {h[3] for h in heldout} & {t[3] for t in training}


def test_tir_math_heldout_problems_are_never_training_problems():
    """The default held-out problems are gen_eval's, which the training set skips: neither the
    first training seeds nor seeds 1,000,000 + i (once training problem i) draw one."""
    pytest.importorskip("reasoning_gym")
    from arlarena_envs.tir_math.data import GeneratedTaskSet, heldout_questions, load_taskset

    config = _config("math")
    run = eval_config(config)
    assert run.reset_options == {"split": "gen_eval"}
    env = gym.make("ARLArena/TIRMath-v0")
    try:
        def question(seed: int, options: dict) -> str:
            return env.reset(seed=seed, options=options)[1]["task"]

        heldout = {question(s, run.reset_options) for s in range(run.seed,
                                                                  run.seed + run.episodes)}
        seeds = [*range(500), *range(run.seed, run.seed + run.episodes)]
        training = {question(s, training_options(config)) for s in seeds}
    finally:
        env.close()
    assert heldout <= heldout_questions()
    assert not heldout & training
    # The skip itself: a raw training problem that is a gen_eval problem is replaced.
    train = load_taskset("train")
    raw = GeneratedTaskSet("train", train.generators, train.levels, train.size, train.seed)
    clash = next(i for i in range(2000) if raw[i].question in heldout_questions())
    assert train[clash].question not in heldout_questions()
    assert train[clash].index > clash


@pytest.mark.parametrize("env", ["ARLArena/ALFWorld-v0", "ARLArena/ALFWorld-Compact-v0"])
def test_alfworld_heldout_games_share_no_scene_layout_and_goal_with_training(env):
    """ALFWorld's games are hashed by what makes them the same task (scene, layout and goal:
    :mod:`arlarena_envs.alfworld.contentkey`), coarser than the panels' file hashes. No game the
    default held-out evaluation plays has the key of any training-split game, the games
    training can draw (every one of the split, a superset of the compact variant's part)."""
    from arlarena_envs.alfworld.contentkey import content_key, info_key
    from arlarena_envs.alfworld.generator import SPLIT_SIZES

    run = eval_config(_config(env, "eval.episodes=16"))
    assert run.reset_options == {"split": "eval_out_of_distribution"}
    game = gym.make(env)
    try:
        heldout = {info_key(game.reset(seed=s, options=run.reset_options)[1])
                   for s in range(run.seed, run.seed + run.episodes)}
    finally:
        game.close()
    training = {content_key("train", i) for i in range(SPLIT_SIZES["train"])}
    assert len(heldout) > 8 and not heldout & training  # v0 draws games at random: repeats
    assert "held-out split" in heldout_source(_config(env))


def test_alfworld_and_bandit_defaults():
    """ALFWorld evaluates on its unseen-scene split by default. The bandit has one task, so
    its results say they played the training task."""
    assert eval_config(_config("alfworld")).reset_options == {"split": "eval_out_of_distribution"}
    bandit = _config("ARLArena/Bandit-v0")
    assert "no held-out tasks" in heldout_source(bandit)
    given = _config("sokoban", "eval.reset_options={split: all}")
    assert eval_config(given).reset_options == {"split": "all"}
    assert "not the env's held-out split" in eval_config(given).record["heldout"]
