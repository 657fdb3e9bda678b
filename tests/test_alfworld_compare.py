"""scripts/alfworld_compare.py on a real (untrained) tiny model: the start's sweep, its best
temperature, the pairing with RL and the evidence files."""

from __future__ import annotations

import gzip
import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arlarena_baselines.evaluation.results import read_records
from arlarena_baselines.trainer.config import ModelConfig
from arlarena_baselines.trainer.models import save_model, smollm2_tokenizer, tiny_model

_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "alfworld_compare.py"
_SPEC = importlib.util.spec_from_file_location("alfworld_compare", _SCRIPT)
alfworld_compare = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(alfworld_compare)


@pytest.fixture(scope="module")
def model(module_tmp):
    tokenizer = smollm2_tokenizer()
    folder = module_tmp("tiny")
    return str(save_model(tiny_model(ModelConfig(name="tiny"), tokenizer), tokenizer, folder))


def test_the_same_model_pairs_to_zero_and_the_evidence_is_written(model, tmp_path, monkeypatch):
    monkeypatch.setenv("ARLARENA_CACHE", str(tmp_path / "cache"))
    out, docs = tmp_path / "out", tmp_path / "docs"
    argv = ["--bc", model, "--rl", model, "--out", str(out), "--docs", str(docs),
            "--splits", "ood", "--episodes", "3", "--sweep", "0,1.0", "--temperatures", "1.0",
            "--set", "model.task_vocab=false", "--set", "rollout.max_turns=2", "--resume"]
    assert alfworld_compare.main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    split = summary["splits"]["ood"]
    assert split["panel"]["name"] == "alfworld-compact-heldout-ood"
    assert split["panel"]["tasks"] == 3 and split["panel"]["matches"]
    assert set(split["sweep"]) == {"0", "1"} and split["best_temperature"] in (0.0, 1.0)
    # The RL model is the start itself: the same games with the same random streams must
    # give the same episodes, response for response, so every paired difference is 0.
    for temperature, paired in split["paired"].items():
        rl = paired["rl"]["RL"]
        assert (rl["diff"], rl["diff_se"], rl["episodes"]) == (0.0, 0.0, 3), temperature
    responses = [{(r["episode_id"], r["step"]): r["response"]
                  for r in read_records(out / "ood" / "T1" / f"{name}.jsonl")
                  if r["type"] == "turn"}
                 for name in ("BC", "RL")]
    assert len(responses[0]) == 6 and responses[0] == responses[1]
    assert len(set(responses[0].values())) > 1  # sampled text, not one fixed reply
    table = split["task_types"]["1"]
    assert [row["model"] for row in table] == ["BC", "RL"] and table[0]["All"]["n"] == 3
    kept = [json.loads(line) for line in gzip.open(docs / "ood" / "T1" / "RL.episodes.jsonl.gz",
                                                   "rt")]
    assert {r["type"] for r in kept} == {"settings", "episode"}
    assert sum(r["type"] == "episode" for r in kept) == 3
    assert (docs / "summary.md").read_text().startswith("# ALFWorld-Compact-v0")
    assert (docs / "ood" / "T0" / "compare.json").is_file()


def test_two_jobs_play_each_split_as_one_job_does(model, tmp_path, monkeypatch):
    monkeypatch.setenv("ARLARENA_CACHE", str(tmp_path / "cache"))
    common = ["--bc", model, "--rl", model, "--episodes", "2", "--sweep", "1.0",
              "--temperatures", "1.0", "--set", "model.task_vocab=false",
              "--set", "rollout.max_turns=2"]
    one, two = tmp_path / "one", tmp_path / "two"
    assert alfworld_compare.main([*common, "--out", str(one)]) == 0
    # As a user runs it: the script itself, its two splits in spawned processes.
    subprocess.run([sys.executable, str(_SCRIPT), *common, "--out", str(two), "--jobs", "2"],
                   check=True, env=os.environ, capture_output=True)

    def turns(out: Path, split: str, name: str) -> list[tuple]:
        return [(r["episode_id"], r["step"], r["response"])
                for r in read_records(out / split / "T1" / f"{name}.jsonl") if r["type"] == "turn"]

    for split in ("id", "ood"):
        for name in ("BC", "RL"):
            assert turns(one, split, name) and turns(one, split, name) == turns(two, split, name)
    summaries = [json.loads((out / "summary.json").read_text())["splits"] for out in (one, two)]
    assert list(summaries[0]) == list(summaries[1]) == ["id", "ood"]
    assert summaries[0] == summaries[1]
    assert summaries[0]["id"]["panel"]["name"] == "alfworld-compact-heldout-id"


def test_jobs_below_one_is_refused(model, tmp_path):
    with pytest.raises(SystemExit):
        alfworld_compare.main(["--bc", model, "--rl", model, "--out", str(tmp_path),
                               "--jobs", "0"])
    assert not any(tmp_path.iterdir())


def test_across_seeds_groups_runs_by_method_and_keeps_single_runs_out():
    rows = {"GRPO/seed0": {"diff": 0.10, "diff_se": 0.02},
            "GRPO/seed1": {"diff": 0.20, "diff_se": 0.04},
            "GRPO/seed2": {"diff": 0.30, "diff_se": 0.03},
            "GiGPO/seed0": {"diff": 0.5, "diff_se": 0.1},
            "RL": {"diff": 9.0, "diff_se": 9.0}}
    methods = alfworld_compare.across_seeds(rows)
    assert set(methods) == {"GRPO", "GiGPO"}
    grpo = methods["GRPO"]
    assert grpo["seeds"] == 3 and grpo["diff"] == pytest.approx(0.2)
    assert grpo["seed_sd"] == pytest.approx(0.1) and grpo["seed_se"] == pytest.approx(0.1 / 3**0.5)
    assert grpo["paired_se"] == pytest.approx(0.03)
    assert methods["GiGPO"]["seeds"] == 1 and math.isnan(methods["GiGPO"]["seed_sd"])


def test_a_comparison_goes_on_from_its_evidence_without_the_rl_checkpoints(model, tmp_path,
                                                                           monkeypatch):
    """The arena made in sittings: a finished RL model's episodes come back from the committed
    episode files, its checkpoint gone; a model with episodes still to play still needs its
    checkpoint, and the start must still match its weights."""
    import shutil

    monkeypatch.setenv("ARLARENA_CACHE", str(tmp_path / "cache"))
    rl = tmp_path / "runs" / "GRPO" / "final"
    shutil.copytree(model, rl)
    common = ["--splits", "ood", "--episodes", "2", "--sweep", "1.0", "--temperatures", "1.0",
              "--set", "model.task_vocab=false", "--set", "rollout.max_turns=2"]
    docs = tmp_path / "docs"
    assert alfworld_compare.main(["--bc", model, "--rl", str(rl), "--labels", "GRPO/seed0",
                                  "--out", str(tmp_path / "first"), "--docs", str(docs),
                                  *common]) == 0
    assert (docs / "ood" / "T1" / "GRPO-seed0.episodes.jsonl.gz").is_file()
    first = json.loads((tmp_path / "first" / "summary.json").read_text())["splits"]
    shutil.rmtree(rl)  # a new machine: the run's checkpoint is gone, its evidence committed
    again = tmp_path / "again"
    assert alfworld_compare.main(["--bc", model, "--rl", str(rl), "--labels", "GRPO/seed0",
                                  "--out", str(again), "--from", str(docs), *common]) == 0
    assert json.loads((again / "summary.json").read_text())["splits"] == first
    # One episode short: the model must play it, and it is not on disk.
    path = tmp_path / "short" / "ood" / "T1" / "GRPO-seed0.jsonl"
    alfworld_compare.restore(tmp_path / "short", docs)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(OSError):
        alfworld_compare.main(["--bc", model, "--rl", str(rl), "--labels", "GRPO/seed0",
                               "--out", str(tmp_path / "short"), "--resume", *common])
    # Another start: its weights do not match the start's committed episodes.
    other = tmp_path / "other"
    tokenizer = smollm2_tokenizer()
    save_model(tiny_model(ModelConfig(name="tiny", init_seed=1), tokenizer), tokenizer, other)
    from arlarena_baselines.evaluation.settings import SettingsMismatch

    with pytest.raises(SettingsMismatch, match="weights"):
        alfworld_compare.main(["--bc", str(other), "--rl", str(rl), "--labels", "GRPO/seed0",
                               "--out", str(tmp_path / "other-out"), "--from", str(docs),
                               *common])


@pytest.mark.parametrize("label", ["BC", "GRPO seed0", "../x"])
def test_a_label_that_cannot_name_a_results_file_is_refused(model, tmp_path, label):
    with pytest.raises(SystemExit):
        alfworld_compare.main(["--bc", model, "--rl", model, "--labels", label,
                               "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()
