"""A results file names the model by its weights and the env's scorer, so results of different
models or scorers never pass for one: their settings differ, so ``report`` never drops one as
a copy of the other nor counts them as one setting, and ``--resume`` refuses to continue a file
with them unless ``--force``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arlarena_baselines.cli import main
from arlarena_baselines.evaluation.results import read_records
from arlarena_baselines.trainer.config import ModelConfig
from arlarena_baselines.trainer.models import load_policy

BANDIT = ["--env", "ARLArena/Bandit-v0", "--episodes", "2", "--max-tokens", "4", "--threads",
          "1", "--no-progress"]


def _save_tiny(folder: Path, seed: int) -> None:
    model, tokenizer = load_policy(ModelConfig(name="tiny", init_seed=seed))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def _settings(out: Path) -> dict:
    (path,) = out.glob("*.jsonl")
    return next(r for r in read_records(path) if r.get("type") == "settings")


def test_two_checkpoints_at_one_path_are_two_models(tmp_path, monkeypatch, capsys):
    """``RUN/final`` before and after a run trained on: the same path, other weights."""
    monkeypatch.chdir(tmp_path)
    _save_tiny(Path("final"), 0)
    assert main(["eval", "--agent", "hf", "--model", "final", "--out", "before", *BANDIT]) == 0
    _save_tiny(Path("final"), 1)
    assert main(["eval", "--agent", "hf", "--model", "final", "--out", "after", *BANDIT]) == 0
    before, after = _settings(Path("before")), _settings(Path("after"))
    assert before["agent"]["name"] == after["agent"]["name"]
    assert before["agent"]["weights"] != after["agent"]["weights"]
    files = [str(next(Path(folder).glob("*.jsonl"))) for folder in ("before", "after")]
    capsys.readouterr()
    # Not one model's episodes standing for both: none of the second file's are dropped as
    # duplicates of the first's (the settings now differ), and the two never pass as one
    # setting (a row per setting, or a warning where merged).
    assert main(["report", *files]) == 0
    err = capsys.readouterr().err
    assert "were dropped" not in err and "already read" not in err
    assert main(["report", f"before={files[0]}", f"after={files[1]}"]) == 0
    rows = capsys.readouterr().out
    assert "| before |" in rows and "| after |" in rows
    # A resume of the first file with the other weights is refused, naming the difference.
    assert main(["eval", "--agent", "hf", "--model", "final", "--out", "before", "--resume",
                 *BANDIT]) != 0
    assert "agent.weights" in capsys.readouterr().err


def _write_original(folder: Path) -> None:
    products = [{"asin": f"B07TEST{i:03d}", "category": "beauty", "query": "shampoo",
                 "name": f"Brand{i} Shampoo for Hair",
                 "product_category": "Beauty & Personal Care › Hair Care › Shampoos",
                 "full_description": "Gentle.", "small_description": ["Sulfate free"],
                 "pricing": "$12.00",
                 "customization_options": {"Size": [{"value": "8 oz"}, {"value": "16 oz"}]}}
                for i in range(30)]
    (folder / "items_shuffle_1000.json").write_text(json.dumps(products))
    (folder / "items_ins_v2_1000.json").write_text(json.dumps(
        {p["asin"]: {"attributes": ["sulfate free"]} for p in products}))


def test_webshop_results_record_their_scorer(tmp_path, monkeypatch, capsys):
    """The tagger and the data source are in the settings record: a run over the original
    files (chosen by ``ARLARENA_WEBSHOP_DATA``) does not merge with one over the generated
    shop."""
    from arlarena_envs.webshop.nouns import noun_tagger

    monkeypatch.chdir(tmp_path)
    args = ["eval", "--agent", "random", "--env", "ARLArena/WebShop-Small-v0", "--episodes",
            "2", "--no-progress"]
    monkeypatch.delenv("ARLARENA_WEBSHOP_DATA", raising=False)
    assert main([*args, "--out", "generated"]) == 0
    data = tmp_path / "original"
    data.mkdir()
    _write_original(data)
    monkeypatch.setenv("ARLARENA_WEBSHOP_DATA", str(data))
    assert main([*args, "--out", "files"]) == 0
    generated, files = _settings(Path("generated")), _settings(Path("files"))
    assert generated["scorer"] == {"reward": "study", "noun_tagger": noun_tagger(),
                                   "data": "generated"}
    assert files["scorer"]["data"] == str(data.resolve())
    assert generated["digest"] != files["digest"]


@pytest.mark.parametrize("tagger", ["rules"])
def test_the_tagger_in_the_record_is_the_one_that_scores(tagger, monkeypatch):
    """``ARLARENA_NOUN_TAGGER=rules`` forces the built-in rules, and the scorer says so."""
    import gymnasium as gym

    from arlarena_envs.webshop import nouns

    monkeypatch.setenv(nouns.TAGGER_ENV_VAR, tagger)
    monkeypatch.setattr(nouns, "_SPACY", [])
    env = gym.make("ARLArena/WebShop-Small-v0")
    assert env.unwrapped.scorer()["noun_tagger"] == "rules"
    env.close()
