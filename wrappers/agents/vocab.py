"""A task vocabulary: a model that knows only the token ids its task's texts can use.

Holds :class:`TaskVocabulary` (the kept ids of a full tokenizer, in order; a model's token
``i`` is full id ``ids[i]``), :class:`TaskVocabTokenizer` (a Hugging Face tokenizer whose ids are
those of the task vocabulary: the texts, the chat template and the special tokens are the full
tokenizer's) and :func:`apply_saved_vocabulary` (what :func:`~wrappers.agents.hf.load_model`
calls on every folder it loads).

Why: a small model trained from scratch on one task (the CPU recipe's Sokoban policy) spends
most of its step in the 49k-row embedding and LM head of SmolLM2's vocabulary, of which its
prompts and responses use about a hundred ids. Keeping only those makes the LM head, the
sampler's softmax and every entropy a hundred columns wide. It changes what the model can say:
it can never sample an id outside the task's, so a response can only be malformed in the
task's own words. The kept ids are written beside the weights (:data:`VOCAB_FILE`), so every
loader of the checkpoint (evaluation, ``train compare``, the ``hf`` agent) applies them.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["VOCAB_FILE", "TaskVocabTokenizer", "TaskVocabulary", "apply_saved_vocabulary"]

VOCAB_FILE = "task_vocab.json"
"""The file beside a checkpoint's weights that lists its task vocabulary's full ids."""


@dataclass(frozen=True)
class TaskVocabulary:
    """The full tokenizer's ids a task keeps, sorted; task id ``i`` is full id ``ids[i]``.

    Attributes:
        ids: the kept full ids, sorted and distinct (the special tokens among them).
        unk: the task id that stands for a full id outside the vocabulary.
        source: what the ids were gathered from (for the record).

    >>> v = TaskVocabulary((2, 7, 40), unk=0)
    >>> v.to_task([40, 2, 99]), v.to_full([2, 0])
    ([2, 0, 0], [40, 2])
    """

    ids: tuple[int, ...]
    unk: int = 0
    source: str = ""
    _index: dict[int, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if list(self.ids) != sorted(set(self.ids)) or not self.ids:
            raise ValueError("a task vocabulary's ids must be distinct, sorted and not empty")
        if not 0 <= self.unk < len(self.ids):
            raise ValueError(f"unk {self.unk} is not a task id of {len(self.ids)}")
        object.__setattr__(self, "_index", {full: i for i, full in enumerate(self.ids)})

    @classmethod
    def gather(cls, id_lists: Iterable[Sequence[int]], always: Iterable[int], unk_full: int,
               source: str = "") -> TaskVocabulary:
        """The vocabulary of every id in ``id_lists`` and ``always`` (special tokens);
        ``unk_full`` (kept too) stands for ids outside it."""
        ids = {int(i) for row in id_lists for i in row} | {int(i) for i in always} | {unk_full}
        ordered = tuple(sorted(ids))
        return cls(ordered, ordered.index(unk_full), source)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, full_id: object) -> bool:
        return full_id in self._index

    def to_task(self, full_ids: Iterable[int]) -> list[int]:
        """Task ids of full ids (:attr:`unk` for an id outside the vocabulary)."""
        return [self._index.get(int(i), self.unk) for i in full_ids]

    def to_full(self, task_ids: Iterable[int]) -> list[int]:
        """Full ids of task ids."""
        return [self.ids[int(i)] for i in task_ids]

    def save(self, folder: str | Path) -> Path:
        path = Path(folder) / VOCAB_FILE
        path.write_text(json.dumps({"ids": list(self.ids), "unk": self.unk,
                                    "source": self.source}) + "\n")
        return path

    @classmethod
    def load(cls, folder: str | Path) -> TaskVocabulary | None:
        """The vocabulary saved in ``folder``, or ``None`` where there is none."""
        path = Path(folder) / VOCAB_FILE
        if not path.is_file():
            return None
        data = json.loads(path.read_text())
        return cls(tuple(data["ids"]), data["unk"], data.get("source", ""))


class TaskVocabTokenizer:
    """A Hugging Face tokenizer seen through a :class:`TaskVocabulary`.

    Encoding gives task ids, decoding takes them, ``len()`` is the task vocabulary's size and
    the special token ids are task ids; texts, the chat template and everything else are the
    wrapped tokenizer's. An id outside the vocabulary encodes as :attr:`TaskVocabulary.unk`,
    with one warning per tokenizer (the task's prompts were gathered from its own episodes,
    so this marks text the task never showed when the vocabulary was built).
    ``save_pretrained`` writes the full tokenizer and the vocabulary beside it.
    """

    def __init__(self, tokenizer: Any, vocab: TaskVocabulary) -> None:
        self.base = tokenizer
        self.vocab = vocab
        self._warned = False

    # -- ids ----------------------------------------------------------------------------------
    def _to_task(self, full_ids: Sequence[int]) -> list[int]:
        if not self._warned and any(i not in self.vocab for i in full_ids):
            self._warned = True
            unknown = sorted({int(i) for i in full_ids if i not in self.vocab})
            warnings.warn(f"text outside the task vocabulary: full ids {unknown[:10]} encode "
                          "as its unknown token", stacklevel=3)
        return self.vocab.to_task(full_ids)

    def __call__(self, text: Any, **kwargs: Any) -> Any:
        encoding = self.base(text, **kwargs)
        ids = encoding["input_ids"]
        nested = bool(ids) and isinstance(ids[0], list)
        encoding["input_ids"] = [self._to_task(r) for r in ids] if nested else self._to_task(ids)
        return encoding

    def encode(self, text: str, **kwargs: Any) -> list[int]:
        return self._to_task(self.base.encode(text, **kwargs))

    def decode(self, ids: Sequence[int], **kwargs: Any) -> str:
        return self.base.decode(self.vocab.to_full(ids), **kwargs)

    def batch_decode(self, rows: Sequence[Sequence[int]], **kwargs: Any) -> list[str]:
        return self.base.batch_decode([self.vocab.to_full(r) for r in rows], **kwargs)

    def convert_ids_to_tokens(self, ids: Any, **kwargs: Any) -> Any:
        if isinstance(ids, int):
            return self.base.convert_ids_to_tokens(self.vocab.ids[ids], **kwargs)
        return self.base.convert_ids_to_tokens(self.vocab.to_full(ids), **kwargs)

    def __len__(self) -> int:
        return len(self.vocab)

    def _special(self, name: str) -> int | None:
        full = getattr(self.base, name)
        return None if full is None else self.vocab.to_task([full])[0]

    @property
    def eos_token_id(self) -> int | None:
        return self._special("eos_token_id")

    @property
    def pad_token_id(self) -> int | None:
        return self._special("pad_token_id")

    @property
    def bos_token_id(self) -> int | None:
        return self._special("bos_token_id")

    @property
    def unk_token_id(self) -> int:
        return self.vocab.unk

    @property
    def all_special_ids(self) -> list[int]:
        return [self.vocab.to_task([i])[0] for i in self.base.all_special_ids if i in self.vocab]

    # -- files and everything else ------------------------------------------------------------
    def save_pretrained(self, folder: str | Path, **kwargs: Any) -> Any:
        saved = self.base.save_pretrained(folder, **kwargs)
        self.vocab.save(folder)
        return saved

    def __getattr__(self, name: str) -> Any:
        if name in ("base", "vocab"):  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.base, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("base", "vocab", "_warned"):
            object.__setattr__(self, name, value)
        else:  # padding_side, pad_token, …: the wrapped tokenizer's settings
            setattr(self.base, name, value)


def apply_saved_vocabulary(tokenizer: Any, folder: str | Path) -> Any:
    """``tokenizer`` seen through the task vocabulary saved in ``folder``, if there is one."""
    vocab = TaskVocabulary.load(folder) if Path(folder).is_dir() else None
    return tokenizer if vocab is None else TaskVocabTokenizer(tokenizer, vocab)
