"""TIR Math task sets: generated sets, CHAMP, and the JSONL / JSON / parquet loaders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arlarena_envs.tir_math.answer import is_equivalent
from arlarena_envs.tir_math.data import (
    ARITHMETIC_GENERATORS,
    BUILTIN_SETS,
    TRAIN_GENERATORS,
    _champ_answer,
    load_champ,
    load_task_file,
    load_taskset,
)

PROJECT = Path(__file__).resolve().parents[1]


def test_generated_sets_are_deterministic_across_processes() -> None:
    code = ("from arlarena_envs.tir_math.data import load_taskset\n"
            "ts = load_taskset('train')\n"
            "print([(t.question, t.answer, t.task_type, t.level) for t in map(ts.__getitem__, "
            "[0, 7, 123456, 999999])])")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           cwd=PROJECT, env={**os.environ, "PYTHONHASHSEED": "12345"}, check=True)
    here = load_taskset("train")
    assert str([(t.question, t.answer, t.task_type, t.level)
                for t in map(here.__getitem__, [0, 7, 123456, 999999])]) == other.stdout.strip()


def test_generated_mix_covers_its_generators_and_levels() -> None:
    train = load_taskset("train")
    tasks = [train[i] for i in range(400)]
    assert {t.task_type for t in tasks} == set(TRAIN_GENERATORS)
    assert {t.level for t in tasks} == {0, 1, 2}
    assert all(t.dataset == "train" and t.question and t.answer for t in tasks)
    arithmetic = load_taskset("arithmetic", level=2)
    assert {arithmetic[i].task_type for i in range(300)} <= set(ARITHMETIC_GENERATORS)
    assert {arithmetic[i].level for i in range(50)} == {2}


def test_eval_set_is_held_out_from_training() -> None:
    evaluation = load_taskset("gen_eval")
    assert len(evaluation) == 1000 and {evaluation[i].level for i in range(200)} == {0, 1, 2, 3}
    train = load_taskset("train")
    train_questions = {train[i].question for i in range(3000)}
    overlap = [i for i in range(300) if evaluation[i].question in train_questions]
    # Distinct seeds; only problems from tiny spaces (e.g. "8 * 0", one animal) can coincide.
    assert len(overlap) <= 30
    assert sum(evaluation[i].question == train[i].question for i in range(300)) <= 3


def test_references_are_self_consistent_for_the_checker() -> None:
    train = load_taskset("train")
    for i in range(0, 200, 7):
        task = train[i]
        assert is_equivalent(f" {task.answer} ", task.answer)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("239", "239"),
        ("C(10, 5), or equivalently 252", "252"),
        ("5/14, or approximately 35.7%", "5/14"),
        ("0 is the only possible value", "0"),
        ("-3 is the only possible value", "-3"),
        ("100 (i.e., all values)", "100"),
        ("The limit exists and is equal to 2/3", "2/3"),
        ("98 values", "98"),
        ("1, 4 and 9", "1, 4, 9"),
        ("376 and 625", "376, 625"),
        ("No", "No"),
        ("yes", "Yes"),
        ("x=6, y=5", "x=6, y=5"),
        ("sqrt(3)/3, or equivalently 1/sqrt(3)", "1/sqrt(3)"),
        ("2^(n-1)", "2^(n-1)"),
        ("The sequence does not exist", None),
        ("At least 1 number", None),
        ("C(n+1, 2m+1)", None),
        ("x=±1", None),
        ("x(x-1)(x-2)...(x-2022)", None),
    ],
)
def test_champ_answer_rewrites(raw: str, expected: str | None) -> None:
    assert _champ_answer(raw) == expected


def test_champ_set() -> None:
    champ = load_champ()
    assert 150 <= len(champ) <= 270
    assert champ is load_taskset("champ")
    categories = {t.task_type for t in champ}
    assert {"Combinatorics", "Inequality", "Number-Theory", "Polynomial", "Sequence"} <= categories
    assert all(t.dataset == "champ" and t.question and t.answer for t in champ)
    assert [t.index for t in champ] == list(range(len(champ)))


def test_loads_jsonl_in_the_usual_shapes(tmp_path: Path) -> None:
    records = [
        {"problem": "What is 1+1?", "answer": "2"},
        {"question": "What is 2+2?", "solution": "We add. \\boxed{4}"},
        {"prompt": [{"role": "system", "content": "be brief"},
                    {"role": "user", "content": "What is 3+3?"}],
         "reward_model": {"ground_truth": "6", "style": "rule"}, "data_source": "simplerl"},
        {"Problem": "AIME-style", "Answer": 204},
        {"problem": "no answer here"},
        {"answer": "no question"},
    ]
    path = tmp_path / "aime_2024.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n\n")
    tasks = load_task_file(path)
    assert tasks.name == "aime_2024" and len(tasks) == 4
    assert [(t.question, t.answer) for t in tasks] == [
        ("What is 1+1?", "2"), ("What is 2+2?", "4"), ("What is 3+3?", "6"), ("AIME-style", "204")]
    assert tasks[2].task_type == "simplerl"
    assert load_taskset(str(path))[3].answer == "204"


def test_loads_json_lists_and_rejects_bad_files(tmp_path: Path) -> None:
    listed = tmp_path / "set.json"
    listed.write_text(json.dumps({"data": [{"question": "q", "final_answer": "1"}]}))
    assert load_task_file(listed, name="mine")[0].dataset == "mine"
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"problem": "no answer"}) + "\n")
    with pytest.raises(ValueError, match="no record has both"):
        load_task_file(empty)
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(ValueError, match="unsupported file type"):
        load_task_file(tmp_path / "x.csv")
    with pytest.raises(FileNotFoundError):
        load_task_file(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="unknown TIR Math dataset"):
        load_taskset("aime2024")
    assert set(BUILTIN_SETS) == {"train", "arithmetic", "gen_eval", "champ"}


def test_parquet_without_pyarrow_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("pyarrow", "pyarrow.parquet"):  # as if not installed: importing it fails
        monkeypatch.setitem(sys.modules, name, None)
    path = tmp_path / "train.parquet"
    path.write_bytes(b"PAR1")
    with pytest.raises(ImportError, match="pip install pyarrow"):
        load_task_file(path)


def test_parquet_with_pyarrow(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "math500.parquet"
    pq.write_table(pa.table({"problem": ["p1", "p2"], "answer": ["1", "\\frac{1}{2}"]}), path)
    tasks = load_task_file(path)
    assert [(t.question, t.answer) for t in tasks] == [("p1", "1"), ("p2", "\\frac{1}{2}")]
