"""The ALFWorld arena's committed evidence (docs/learn-alfworld/arena): GiGPO seed 0 is the
recipe run's episodes (scripts/alfworld_arena_seed0.py), usable without its checkpoint."""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import importlib.util
import json
from pathlib import Path

import pytest

from arlarena_baselines.trainer.heldout import played_without_model

ROOT = Path(__file__).resolve().parents[1]
ARENA, RECIPE = ROOT / "docs" / "learn-alfworld" / "arena", ROOT / "docs" / "learn-alfworld" / \
    "recipe-run"
FINAL = "runs/alfworld-arena/GiGPO/base/seed0/final"
_SPEC = importlib.util.spec_from_file_location("alfworld_compare",
                                              ROOT / "scripts" / "alfworld_compare.py")
alfworld_compare = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(alfworld_compare)


def _records(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


@pytest.mark.parametrize("split", ["ood", "id"])
def test_gigpo_seed0_is_the_recipe_run_renamed(split):
    pairs = sorted((ARENA / split).glob("T*/GiGPO-seed0.episodes.jsonl.gz"))
    assert [p.parent.name for p in pairs] == ["T0.4", "T0.6", "T1"]
    for path in pairs:
        arena, recipe = _records(path), _records(RECIPE / split / path.parent.name /
                                                 "RL.episodes.jsonl.gz")
        assert len(arena) == len(recipe) > 500
        for a, r in zip(arena, recipe, strict=True):
            if a["type"] == "settings":
                assert a["agent"]["name"] == FINAL and a["digest"] != r["digest"]
                assert a["agent"]["weights"] == r["agent"]["weights"]
            else:
                assert a["agent"] == FINAL
                assert {**a, "agent": None} == {**r, "agent": None}
    for path in sorted((ARENA / split).glob("T*/BC.episodes.jsonl.gz")):
        assert _records(path) == _records(RECIPE / split / path.parent.name / path.name)


def test_the_renamed_episodes_need_no_checkpoint(tmp_path):
    """The arena's comparison counts GiGPO seed 0 as played from its file alone (its digest
    recomputed for the new name), and not with another model's name or settings."""
    alfworld_compare.restore(tmp_path, ARENA)
    args = argparse.Namespace(config=str(ROOT / alfworld_compare.RL_CONFIG), episodes=0,
                              progress=False, set=[])
    config = alfworld_compare.split_config(args, alfworld_compare.PANELS["ood"], 1.0)

    def named(name: str, temperature: float = 1.0):
        c = dataclasses.replace(config, model=dataclasses.replace(config.model, name=name))
        return dataclasses.replace(c, eval=dataclasses.replace(c.eval, temperature=temperature))

    path = tmp_path / "ood" / "T1" / "GiGPO-seed0.jsonl"
    assert played_without_model(named(FINAL), path)
    assert not played_without_model(named("runs/alfworld-arena/GRPO/base/seed0/final"), path)
    assert not played_without_model(named(FINAL, 0.4), path)


def test_the_run_record_says_where_it_came_from():
    record = json.loads((ARENA / "runs" / "GiGPO" / "base" / "seed0" / "arena.json").read_text())
    assert (record["method"], record["seed"], record["steps"]) == ("GiGPO", 0, 36)
    assert record["copied_from"].startswith("docs/learn-alfworld/recipe-run")
