"""The trainer's held-out evaluation plays the same episodes whatever the batch layout.

Each held-out episode samples from its own stream (run seed, episode id, turn), so how many
envs run at once (the rollout's pool, or ``eval.width``'s) and how prompts are chunked for
generation change nothing: one checkpoint
compared on the same levels is compared on the same episodes. Its results files are what
``arlarena eval`` writes: ``arlarena report`` and ``arlarena analyze`` read them.
"""

from __future__ import annotations

import json

import pytest

from arlarena_baselines.cli import main
from arlarena_baselines.evaluation import read_records
from arlarena_baselines.rollout import make_env_pool
from arlarena_baselines.trainer import heldout
from arlarena_baselines.trainer.config import load_config
from arlarena_baselines.trainer.heldout import evaluate_policy, heldout_rollout
from arlarena_baselines.trainer.policy import Policy, env_factory
from arlarena_baselines.trainer.tracking import MetricsLogger

pytestmark = pytest.mark.usefixtures("isolated_cache")


def _config(overrides: list[str]):
    return load_config(None, [
        "model.name=tiny", "rollout.env=sokoban", "rollout.max_turns=3",
        "rollout.max_new_tokens=6", "eval.episodes=10", "eval.temperature=1.0",
        "eval.top_k=0", "eval.top_p=1.0", *overrides,
    ])


def _pool(config):
    r = config.rollout
    return make_env_pool(env_factory(config), r.n_groups * r.group_size, r.env_workers)


def episodes(overrides: list[str], results) -> list[tuple]:
    config = _config(overrides)
    with _pool(config) as pool:
        rollout = heldout_rollout(Policy.load(config), config, pool, results=results)
    return sorted((s.traj_id, s.step, s.anchor, tuple(s.response_ids)) for s in rollout.samples)


def _played(path) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in read_records(path)
                  if r["type"] in ("turn", "episode"))


def test_heldout_episodes_do_not_depend_on_pool_or_generation_batch_size(tmp_path):
    wide = episodes(["rollout.n_groups=4", "rollout.group_size=4", "rollout.gen_batch_size=64"],
                    tmp_path / "wide.jsonl")
    narrow = episodes(["rollout.n_groups=1", "rollout.group_size=3", "rollout.gen_batch_size=2",
                       "rollout.env_workers=2"], tmp_path / "narrow.jsonl")
    assert wide == narrow
    assert len({e[0] for e in wide}) == 10
    assert _played(tmp_path / "wide.jsonl") == _played(tmp_path / "narrow.jsonl")


def test_an_evaluation_wider_than_the_pool_plays_the_same_episodes_in_one_wave(tmp_path,
                                                                              monkeypatch):
    narrow = ["rollout.n_groups=1", "rollout.group_size=3"]
    pools = []

    def spied(factory, width, workers):
        pools.append(width)
        return make_env_pool(factory, width, workers)

    monkeypatch.setattr(heldout, "make_env_pool", spied)
    waves = episodes(narrow, tmp_path / "waves.jsonl")
    assert pools == []  # no width: the rollout's pool of 3, four waves
    wide = episodes([*narrow, "eval.width=64"], tmp_path / "wide.jsonl")
    assert pools == [10]  # one slot an episode, at most
    assert wide == waves
    assert _played(tmp_path / "wide.jsonl") == _played(tmp_path / "waves.jsonl")


def test_the_trainers_evaluation_writes_results_that_report_and_analyze_read(tmp_path, capsys):
    config = _config(["rollout.n_groups=2", "rollout.group_size=2"])
    policy, logger = Policy.load(config), MetricsLogger(tmp_path / "run", "rl")
    with _pool(config) as pool:
        for _ in range(2):  # a rerun of the step (a resumed run) replaces its file
            metrics = evaluate_policy(policy, config, pool, logger=logger, step=3)
    logger.close()
    path = tmp_path / "run" / "heldout" / "rl_step000003.jsonl"
    records = list(read_records(path))
    episodes = [r for r in records if r["type"] == "episode"]
    assert len(episodes) == metrics["eval/episodes"] == 10
    assert sum(r["turns"] for r in episodes) == sum(r["type"] == "turn" for r in records) == 30
    assert sum(r["won"] for r in episodes) / 10 == metrics["eval/success_rate"]
    assert all(r["usage"]["completion_tokens"] > 0 for r in episodes)
    assert main(["report", str(path)]) == 0
    assert "| rl@3 | ARLArena/Sokoban-v0 | all | 10 |" in capsys.readouterr().out
    assert main(["analyze", str(path), "--out", str(tmp_path / "flows"), "--no-png",
                 "--no-html"]) == 0
    assert (tmp_path / "flows" / "Sokoban-v0__rl_3_loops.csv").is_file()


def test_a_resumed_heldout_evaluation_plays_only_the_episodes_it_lacks(tmp_path):
    """``resume`` (what ``train compare --resume`` passes): the finished episodes of the
    results file stay and are not played again; the rest are, as an uninterrupted run plays
    them. (The CLI's path: test_train_compare.py.)"""
    config = _config(["rollout.n_groups=2", "rollout.group_size=2"])
    policy, path = Policy.load(config), tmp_path / "heldout.jsonl"
    with _pool(config) as pool:
        heldout_rollout(policy, config, pool, results=path)
        whole, records = _played(path), list(read_records(path))
        missing = {r["episode_id"] for r in records if r["type"] == "episode"}
        missing -= {"eval0/0", "eval3/0", "eval4/0", "eval6/0", "eval8/0", "eval9/0"}
        path.write_text("".join(json.dumps(r) + "\n" for r in records
                                if r.get("episode_id") not in missing))
        rollout = heldout_rollout(policy, config, pool, results=path, resume=True)
    assert len(missing) == 4 and len({s.traj_id for s in rollout.samples}) == 4
    assert _played(path) == whole

