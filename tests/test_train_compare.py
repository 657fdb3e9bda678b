"""``arlarena train compare``: checkpoints on the same held-out episodes, paired differences."""

from __future__ import annotations

import json

import pytest

from arlarena_baselines.cli import main
from arlarena_baselines.evaluation.paired import paired_comparison
from arlarena_baselines.evaluation.results import read_records
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


def _played(path) -> list[dict]:
    return [r for r in read_records(path) if r["type"] in ("turn", "episode")]


def test_compare_plays_every_checkpoint_on_the_same_episodes(tmp_path, capsys):
    a, b = save_tiny(tmp_path / "a", 0), save_tiny(tmp_path / "b", 1)
    out = tmp_path / "cmp"
    argv = ["train", "compare", a, a, b, "--env", "sokoban", "--out", str(out), "--threads",
            "1", "--set", "eval.episodes=5", "--set", "rollout.max_turns=2", "--set",
            "rollout.max_new_tokens=4", "--set", "run.progress=false"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "5 held-out episodes" in printed and printed.count("| ") >= 4
    rows = json.loads((out / "compare.json").read_text())
    assert [r["model"] for r in rows] == [a, a, b]
    assert rows[1]["success_diff"] == rows[1]["success_diff_se"] == 0.0
    first, again = _played(out / "0.jsonl"), _played(out / "1.jsonl")
    assert first == again  # the same checkpoint twice: the same episodes, turn by turn
    episodes = [r for r in first if r["type"] == "episode"]
    assert sorted(r["episode_id"] for r in episodes) == [f"eval{i}/0" for i in range(5)]
    assert sum(r["type"] == "turn" for r in first) == sum(r["turns"] for r in episodes) == 10

    # The results files are what `arlarena eval` writes: the report and the analysis read them.
    assert main(["report", f"A={out / '0.jsonl'}", f"B={out / '2.jsonl'}"]) == 0
    table = capsys.readouterr().out
    assert "| A | ARLArena/Sokoban-v0 | all | 5 |" in table and "| B |" in table
    assert main(["analyze", str(out / "2.jsonl"), "--out", str(tmp_path / "flows"),
                 "--no-png", "--no-html"]) == 0
    assert len(list((tmp_path / "flows").glob("Sokoban-v0__*_loops.csv"))) == 1

    # A comparison stopped in the middle resumes: the finished episodes stay, the rest is
    # played, and the rows come out the same.
    whole = sorted(json.dumps(r, sort_keys=True) for r in _played(out / "2.jsonl"))
    lines = (out / "2.jsonl").read_text().splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if json.loads(line)["type"] == "episode")
    (out / "2.jsonl").write_text("".join(lines[:last]) + lines[last][:20])  # killed mid-write
    assert main([*argv, "--resume"]) == 0
    assert json.loads((out / "compare.json").read_text()) == rows
    assert sorted(json.dumps(r, sort_keys=True) for r in _played(out / "2.jsonl")) == whole
    capsys.readouterr()
    assert main([*argv, "--set", "eval.temperature=1.0", "--resume"]) == 2
    assert "other settings" in capsys.readouterr().err
