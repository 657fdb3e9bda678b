"""``arlarena train compare``: checkpoints on the same held-out episodes, paired differences."""

from __future__ import annotations

import json

import pytest

from arlarena_baselines.cli import main
from arlarena_baselines.evaluation.paired import paired_comparison
from arlarena_baselines.trainer.config import ModelConfig
from arlarena_baselines.trainer.models import load_policy

pytestmark = pytest.mark.usefixtures("isolated_cache")


def test_the_paired_difference_cancels_what_tasks_share():
    easy_hard = {f"t{i}": float(i % 2) for i in range(10)}
    better = {k: min(1.0, v + (k == "t0")) for k, v in easy_hard.items()}
    c = paired_comparison(easy_hard, better)
    assert (c.n, c.mean_a, c.mean_b, c.diff) == (10, 0.5, 0.6, pytest.approx(0.1))
    assert c.se_diff == pytest.approx(0.1)  # one task of ten changed
    assert c.se_a == pytest.approx(c.se_b, rel=0.1) and c.se_diff < c.se_a
    with pytest.raises(ValueError, match="share no task"):
        paired_comparison({"a": 1.0}, {"b": 1.0})


def save_tiny(path, init_seed: int) -> str:
    model, tokenizer = load_policy(ModelConfig(name="tiny", init_seed=init_seed))
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def test_compare_plays_every_checkpoint_on_the_same_episodes(tmp_path, capsys):
    a, b = save_tiny(tmp_path / "a", 0), save_tiny(tmp_path / "b", 1)
    out = tmp_path / "cmp"
    assert main(["train", "compare", a, a, b, "--env", "sokoban", "--out", str(out),
                 "--threads", "1", "--set", "eval.episodes=5", "--set", "rollout.max_turns=2",
                 "--set", "rollout.max_new_tokens=4", "--set", "run.progress=false"]) == 0
    printed = capsys.readouterr().out
    assert "5 held-out episodes" in printed and printed.count("| ") >= 4
    rows = json.loads((out / "compare.json").read_text())
    assert [r["model"] for r in rows] == [a, a, b]
    assert rows[1]["success_diff"] == rows[1]["success_diff_se"] == 0.0
    same = [{k: v for k, v in json.loads(line).items() if k != "model"}
            for i in (0, 1) for line in (out / f"{i}.jsonl").read_text().splitlines()]
    assert same[:5] == same[5:]  # the same checkpoint twice: the same episodes
    assert sorted(r["task"] for r in same[:5]) == [f"eval{i}" for i in range(5)]
