"""Maths problems with reference answers: generated training sets, competition evaluation sets,
and loaders for the usual JSONL / JSON / parquet files.

Holds :class:`MathTask`, the task sets (:class:`TaskSet`, :class:`GeneratedTaskSet`,
:class:`ListTaskSet`), :func:`load_taskset` (a built-in name or a file path →
task set), :func:`load_task_file`, :func:`load_champ` and the generator lists.

Built-in sets (all offline; no download happens):

* ``train`` -- procedurally generated problems from reasoning-gym's maths generators
  (:data:`TRAIN_GENERATORS`), difficulty levels 0-2 of reasoning-gym's curricula. A problem
  whose text is also a ``gen_eval`` problem (about 2.5 % of draws) is skipped for the next
  one (:class:`TrainingTaskSet`), so training never sees a held-out problem.
* ``arithmetic`` -- the same, restricted to :data:`ARITHMETIC_GENERATORS` (the problems the
  ``math-coder`` agent can solve; the smoke-test set), held-out problems skipped too.
* ``gen_eval`` -- a held-out generated evaluation set (1,000 problems, levels 0-3, a seed far
  from the training seeds).
* ``champ`` -- the competition problems of the CHAMP dataset (``champ-dataset`` on PyPI, MIT),
  kept where the reference answer is a checkable mathematical object or yes/no.

Anything else is read as a file of records with a question (``problem``/``question``/
``prompt``/chat messages) and an answer (``answer``/``final_answer``/``ground_truth``/
``reward_model.ground_truth``, or the last ``\\boxed{}`` of ``solution``): e.g. SimpleRL's
training data or AIME 2024/2025 files you have.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from arlarena_envs.tir_math.answer import extract_boxed

__all__ = [
    "ARITHMETIC_GENERATORS",
    "BUILTIN_SETS",
    "TRAIN_GENERATORS",
    "GeneratedTaskSet",
    "ListTaskSet",
    "MathTask",
    "TaskSet",
    "TrainingTaskSet",
    "heldout_questions",
    "load_champ",
    "load_task_file",
    "load_taskset",
]

ARITHMETIC_GENERATORS: tuple[str, ...] = (
    "basic_arithmetic", "chain_sum", "products", "decimal_chain_sum", "gcd", "lcm",
    "simple_equations", "count_primes", "simple_geometry", "dice", "complex_arithmetic",
)
"""reasoning-gym generators whose problems a short script solves from the text alone."""

TRAIN_GENERATORS: tuple[str, ...] = (*ARITHMETIC_GENERATORS, "gsm_symbolic", "leg_counting")
"""The training mix: the arithmetic generators plus word problems."""

_EVAL_SEED = 1_000_000_007


@dataclass(frozen=True)
class MathTask:
    """One problem.

    Attributes:
        question: the problem text shown to the model.
        answer: the reference answer (never shown to the model).
        dataset: the name of the set it comes from (``info["dataset"]``).
        index: its index in that set.
        task_type: the generator or category (``info["task_type"]``).
        level: the difficulty level for generated problems, else ``None``.
    """

    question: str
    answer: str
    dataset: str
    index: int
    task_type: str = ""
    level: int | None = None


class TaskSet(Sequence[MathTask]):
    """A named, indexable set of :class:`MathTask`."""

    name: str = ""

    def __iter__(self) -> Iterator[MathTask]:
        return (self[i] for i in range(len(self)))


class ListTaskSet(TaskSet):
    """A task set held in memory (a file, CHAMP)."""

    def __init__(self, name: str, tasks: Sequence[MathTask]) -> None:
        if not tasks:
            raise ValueError(f"task set {name!r} is empty")
        self.name = name
        self._tasks = tuple(tasks)

    def __len__(self) -> int:
        return len(self._tasks)

    def __getitem__(self, index: int) -> MathTask:  # type: ignore[override]
        return self._tasks[index]


class GeneratedTaskSet(TaskSet):
    """Problems drawn on demand from reasoning-gym's generators.

    Task ``i`` picks its generator and difficulty level from a RNG seeded with
    ``(seed, i)`` (string-seeded, so identical on every machine and process) and is item ``i``
    of that generator at that level, itself seeded by reasoning-gym from ``seed + i``.

    >>> tasks = GeneratedTaskSet("demo", ("chain_sum",), levels=(0,), size=10, seed=0)
    >>> task = tasks[3]
    >>> task.task_type, task == GeneratedTaskSet("demo", ("chain_sum",), (0,), 10, 0)[3]
    ('chain_sum', True)
    """

    def __init__(
        self,
        name: str,
        generators: Sequence[str],
        levels: Sequence[int] = (0, 1, 2),
        size: int = 1_000_000,
        seed: int = 0,
    ) -> None:
        if not generators or not levels or size < 1:
            raise ValueError("a generated set needs generators, levels and a positive size")
        self.name = name
        self.generators = tuple(generators)
        self.levels = tuple(int(level) for level in levels)
        self.size = int(size)
        self.seed = int(seed)
        for generator in self.generators:
            _generator(generator, self.levels[0], self.seed, self.size)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> MathTask:  # type: ignore[override]
        if not -self.size <= index < self.size:
            raise IndexError(f"task index {index} out of range for {self.size} tasks")
        index %= self.size
        rng = random.Random(f"{self.name}:{self.seed}:{index}")
        generator = rng.choice(self.generators)
        level = rng.choice(self.levels)
        item = _generator(generator, level, self.seed, self.size)[index]
        return MathTask(
            question=str(item["question"]),
            answer=str(item["answer"]),
            dataset=self.name,
            index=index,
            task_type=generator,
            level=level,
        )


class TrainingTaskSet(GeneratedTaskSet):
    """A generated training set that never shows a held-out problem: task ``i`` is the first
    problem from index ``i`` on whose question is not in :func:`heldout_questions` (its
    ``index`` says which)."""

    def __getitem__(self, index: int) -> MathTask:  # type: ignore[override]
        task = super().__getitem__(index)
        heldout = heldout_questions()
        while task.question in heldout:
            task = super().__getitem__((task.index + 1) % self.size)
        return task


@lru_cache(maxsize=1)
def heldout_questions() -> frozenset[str]:
    """The questions of the held-out ``gen_eval`` set (every level), which training skips."""
    tasks = load_taskset("gen_eval")
    return frozenset(tasks[i].question for i in range(len(tasks)))


@lru_cache(maxsize=256)
def _generator(name: str, level: int, seed: int, size: int) -> Any:
    """A reasoning-gym dataset of generator ``name`` at curriculum level ``level``."""
    try:
        from reasoning_gym import factory
    except ImportError as error:
        raise ImportError(
            "generated TIR Math sets need reasoning-gym: pip install reasoning-gym"
        ) from error
    if name not in factory.DATASETS:
        raise ValueError(f"reasoning-gym has no generator {name!r}")
    dataset_cls, config_cls = factory.DATASETS[name]
    if factory.has_curriculum(name):
        curriculum = factory.create_curriculum(name)
        curriculum.set_global_level(level)
        config = curriculum.generate_configuration({"seed": seed, "size": size})
    else:
        config = config_cls(seed=seed, size=size)
    return dataset_cls(config)


# -- CHAMP ---------------------------------------------------------------------------------------
_CHAMP_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\s*\((?:i\.e\.,?|no |none )[^)]*\)\s*$", re.I), ""),
    (re.compile(r"^(.+?),\s*or approximately .*$", re.I), r"\1"),
    (re.compile(r"^.+?,\s*or (?:equivalently|an equivalent form such as)\s+(.+)$", re.I), r"\1"),
    (re.compile(r"^(-?[\w/^().+*-]+) is the only possible value$", re.I), r"\1"),
    (re.compile(r"^the (?:limit exists and is equal to|only possible value for the limit is)"
                r" (.+)$", re.I), r"\1"),
    (re.compile(r"^(\d+) (?:values?|pairs?|roots?|inequalities)$", re.I), r"\1"),
    (re.compile(r"^(-?\d+(?:, -?\d+)*) and (-?\d+)$"), r"\1, \2"),
)
_MATH_WORDS = frozenset({"sqrt", "floor", "ceil", "pi"})


def _champ_answer(raw: str) -> str | None:
    """The checkable form of a CHAMP answer, or ``None`` when it is prose."""
    text = raw.strip()
    for pattern, replacement in _CHAMP_REWRITES:
        text = pattern.sub(replacement, text).strip()
    if text.lower() in {"yes", "no"}:
        return text.capitalize()
    if re.search(r"C\(|sum_|\.\.\.|±|[^\x00-\x7f]", text):
        return None
    words = {w.lower() for w in re.findall(r"[A-Za-z]{2,}", text)}
    return text if words <= _MATH_WORDS else None


def load_champ() -> ListTaskSet:
    """CHAMP's competition problems whose answers can be checked (see :func:`_champ_answer`)."""
    return _champ()


@lru_cache(maxsize=1)
def _champ() -> ListTaskSet:
    try:
        import champ_dataset
    except ImportError as error:
        raise ImportError("the champ set needs champ-dataset: pip install champ-dataset") from error
    tasks = []
    for problem in champ_dataset.load("v0").problems.values():
        answer = _champ_answer(problem.answer)
        if answer is not None:
            tasks.append(MathTask(problem.text, answer, "champ", len(tasks),
                                  task_type=str(problem.category)))
    return ListTaskSet("champ", tasks)


# -- files ---------------------------------------------------------------------------------------
_QUESTION_KEYS = ("problem", "question", "prompt", "Problem", "Question", "query", "input")
_ANSWER_KEYS = ("answer", "final_answer", "gt_answer", "ground_truth", "expected_answer",
                "target", "Answer", "reward_model.ground_truth")


def _field(record: Mapping[str, Any], dotted: str) -> Any:
    value: Any = record
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _question(record: Mapping[str, Any]) -> str | None:
    for key in _QUESTION_KEYS:
        value = record.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, Sequence) and not isinstance(value, str):
            user = [m.get("content") for m in value
                    if isinstance(m, Mapping) and m.get("role") == "user"]
            if user and isinstance(user[-1], str) and user[-1].strip():
                return user[-1].strip()
    return None


def _answer(record: Mapping[str, Any]) -> str | None:
    for key in _ANSWER_KEYS:
        value = _field(record, key)
        if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 1:
            value = value[0]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, str) and value.strip():
            return extract_boxed(value) or value.strip()
    solution = record.get("solution")
    return extract_boxed(solution) if isinstance(solution, str) else None


def _records(path: Path) -> list[Mapping[str, Any]]:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as error:
            raise ImportError(
                f"reading {path.name} needs pyarrow: pip install pyarrow (or convert the file "
                "to JSONL)"
            ) from error
        return pq.read_table(path).to_pylist()
    text = path.read_text(encoding="utf-8")
    if suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if suffix == ".json":
        data = json.loads(text)
        if isinstance(data, Mapping):
            lists = [v for v in data.values() if isinstance(v, list)]
            if len(lists) != 1:
                raise ValueError(f"{path}: expected a list of records or an object holding one")
            data = lists[0]
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a list of records")
        return data
    raise ValueError(f"{path}: unsupported file type {suffix!r} (use .jsonl, .json or .parquet)")


def load_task_file(path: str | Path, name: str | None = None) -> ListTaskSet:
    """Read problems and answers from a ``.jsonl``, ``.json`` or ``.parquet`` file.

    Records without a usable question or answer are skipped; a file with none raises
    ``ValueError``. ``name`` (default: the file's stem) becomes ``info["dataset"]``.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no task file {path}")
    name = name or path.stem
    tasks = []
    for record in _records(path):
        if not isinstance(record, Mapping):
            continue
        question, answer = _question(record), _answer(record)
        if question and answer:
            kind = record.get("type") or record.get("subject") or record.get("data_source") or ""
            tasks.append(MathTask(question, answer, name, len(tasks), task_type=str(kind)))
    if not tasks:
        raise ValueError(f"{path}: no record has both a question and an answer")
    return ListTaskSet(name, tasks)


BUILTIN_SETS: tuple[str, ...] = ("train", "arithmetic", "gen_eval", "champ")
"""The names :func:`load_taskset` knows without a file."""


def load_taskset(name: str, level: int | None = None) -> TaskSet:
    """A built-in set (:data:`BUILTIN_SETS`) or a task file, by name or path.

    ``level`` restricts a generated set to one difficulty level.
    """
    levels = None if level is None else (int(level),)
    if name == "train":
        return _generated("train", TRAIN_GENERATORS, levels or (0, 1, 2), 1_000_000, 0)
    if name == "arithmetic":
        return _generated("arithmetic", ARITHMETIC_GENERATORS, levels or (0, 1, 2), 1_000_000, 0)
    if name == "gen_eval":
        return _generated("gen_eval", TRAIN_GENERATORS, levels or (0, 1, 2, 3), 1000, _EVAL_SEED)
    if name == "champ":
        return load_champ()
    path = Path(name).expanduser()
    if path.suffix.lower() in {".jsonl", ".json", ".parquet"}:
        return _file(str(path.resolve()), path.stat().st_mtime_ns if path.exists() else 0)
    raise ValueError(
        f"unknown TIR Math dataset {name!r}: use one of {', '.join(BUILTIN_SETS)} or a path to "
        "a .jsonl/.json/.parquet file"
    )


@lru_cache(maxsize=32)
def _generated(name: str, generators: tuple[str, ...], levels: tuple[int, ...], size: int,
               seed: int) -> GeneratedTaskSet:
    """A generated set; the training sets (every one but ``gen_eval``) skip held-out problems."""
    kind = GeneratedTaskSet if name == "gen_eval" else TrainingTaskSet
    return kind(name, generators, levels, size, seed)


@lru_cache(maxsize=16)
def _file(path: str, mtime_ns: int) -> ListTaskSet:
    return load_task_file(path)
