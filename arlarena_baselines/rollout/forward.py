"""The policy's forward pass on (prompt, response) pairs: token log-probs and entropies.

Holds :class:`PackedBatch` and :func:`pack_pairs` (each prompt + response left-padded into one
row, so every response ends at the last column), :func:`right_aligned` (per-token values into
the same layout), :func:`response_log_probs` (log π of each response token and, if asked, the
entropy of π at that position, computing logits for the response positions only, and the
prompt prefix all rows share only once),
:func:`sample_log_probs` (the same for step samples, batched by length) and
:func:`score_samples`, which fills a rollout's ``old_log_probs`` and turn entropies.

Rollouts, the RL update, the reference model and behaviour cloning all use these functions,
so a log-prob means the same thing everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from arlarena_baselines.rollout.samples import StepSample
from wrappers.agents.sampling import common_length, expanded_cache, prefix_kv

__all__ = [
    "PackedBatch",
    "autocast",
    "pack_pairs",
    "response_log_probs",
    "right_aligned",
    "sample_log_probs",
    "score_samples",
]


@dataclass
class PackedBatch:
    """Left-padded prompt + response rows.

    Attributes:
        input_ids, attention_mask, position_ids: (B, L).
        response_mask: (B, K) float, 1 on the response tokens, which are the last ``K``
            columns' right-aligned tail of each row (K = the longest response).
    """

    input_ids: Tensor
    attention_mask: Tensor
    position_ids: Tensor
    response_mask: Tensor

    @property
    def width(self) -> int:
        """K: the number of response columns."""
        return self.response_mask.shape[1]

    def to(self, device: torch.device | str) -> PackedBatch:
        return PackedBatch(*(t.to(device) for t in (
            self.input_ids, self.attention_mask, self.position_ids, self.response_mask
        )))


def pack_pairs(
    prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]], pad_id: int
) -> PackedBatch:
    """Pack token-id pairs into one left-padded batch (positions count real tokens only).

    >>> b = pack_pairs([[5, 6, 7], [8]], [[9], [10, 11]], pad_id=0)
    >>> b.input_ids.tolist(), b.response_mask.tolist()
    ([[5, 6, 7, 9], [0, 8, 10, 11]], [[0.0, 1.0], [1.0, 1.0]])
    >>> b.position_ids.tolist()
    [[0, 1, 2, 3], [0, 0, 1, 2]]
    """
    rows = [list(p) + list(r) for p, r in zip(prompts, responses, strict=True)]
    length = max(len(r) for r in rows)
    width = max(1, max(len(r) for r in responses))
    ids = torch.full((len(rows), length), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), length), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, length - len(row) :] = torch.as_tensor(row, dtype=torch.long)
        mask[i, length - len(row) :] = 1
    positions = (mask.cumsum(-1) - 1).clamp_min(0)
    lengths = torch.as_tensor([len(r) for r in responses])
    response_mask = (torch.arange(width) >= width - lengths.unsqueeze(-1)).float()
    return PackedBatch(ids, mask, positions, response_mask)


def right_aligned(values: Sequence[Sequence[float]], width: int) -> Tensor:
    """(B, width) float32: each row's values at its right end, zeros before (as ``pack_pairs``).

    >>> right_aligned([[1.0], [2.0, 3.0]], 2).tolist()
    [[0.0, 1.0], [2.0, 3.0]]
    """
    out = torch.zeros((len(values), width), dtype=torch.float32)
    for i, row in enumerate(values):
        if len(row):
            out[i, width - len(row) :] = torch.as_tensor(list(row), dtype=torch.float32)
    return out


def autocast(device: torch.device, dtype: torch.dtype | None) -> Any:
    """``torch.autocast`` to ``dtype`` on ``device``, or a no-op when ``dtype`` is ``None``."""
    return torch.autocast(device.type, dtype=dtype, enabled=dtype is not None)


SHARED_PREFIX_MIN = 16
"""The shortest prompt prefix worth a pass of its own in :func:`response_log_probs`."""


def shared_prompt_prefix(batch: PackedBatch) -> int:
    """How many leading tokens every row's prompt shares (at least one prompt token of each
    row is left after them).

    >>> shared_prompt_prefix(pack_pairs([[5, 6, 7], [0, 5, 6, 8]], [[9], [9]], pad_id=0))
    0
    >>> shared_prompt_prefix(pack_pairs([[5, 6, 7], [5, 6, 8, 8]], [[9], [9, 9]], pad_id=0))
    2
    """
    starts = (batch.attention_mask == 0).sum(-1).tolist()
    rows = [ids[start:] for ids, start in zip(batch.input_ids.tolist(), starts, strict=True)]
    prompts = [len(r) - int(n) for r, n in zip(rows, batch.response_mask.sum(-1), strict=True)]
    return max(0, min(common_length(rows), min(prompts) - 1))


def _response_logits(model: torch.nn.Module, batch: PackedBatch, share_prefix: bool) -> Tensor:
    """(B, K, V) logits at the positions that predict the K response columns.

    The prompt prefix every row shares (the chat header and the env's preamble: most of a
    templated prompt) runs once, and the rest of each row attends to its keys and values,
    gradients included; rows without such a prefix, or a model whose cache cannot be shared
    (gradient checkpointing, sliding windows), run whole.
    """
    width, length = batch.width, batch.input_ids.shape[1]
    shared = shared_prompt_prefix(batch) if share_prefix else 0
    kv = None
    if shared >= SHARED_PREFIX_MIN and not getattr(model, "is_gradient_checkpointing", False):
        start = int((batch.attention_mask[0] == 0).sum())
        kv = prefix_kv(model, batch.input_ids[0, start : start + shared].tolist())
    if kv is None:  # Positions length-K-1 .. length-2 predict the K response columns.
        keep = torch.arange(length - width - 1, length - 1, device=batch.input_ids.device)
        return model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                     position_ids=batch.position_ids, logits_to_keep=keep,
                     use_cache=False).logits
    rest = [row[row.shape[0] - int(n) + shared :] for row, n in zip(
        batch.input_ids, batch.attention_mask.sum(-1), strict=True)]
    rest_width = max(r.shape[0] for r in rest)
    ids = batch.input_ids.new_zeros((len(rest), rest_width))
    mask = batch.attention_mask.new_zeros((len(rest), shared + rest_width))
    mask[:, :shared] = 1
    for i, row in enumerate(rest):
        ids[i, rest_width - row.shape[0] :] = row
        mask[i, shared + rest_width - row.shape[0] :] = 1
    positions = (mask.cumsum(-1) - 1).clamp_min(0)[:, shared:]
    keep = torch.arange(rest_width - width - 1, rest_width - 1, device=ids.device)
    return model(input_ids=ids, attention_mask=mask, position_ids=positions,
                 past_key_values=expanded_cache(model, kv, len(rest)), use_cache=True,
                 logits_to_keep=keep).logits


def response_log_probs(
    model: torch.nn.Module,
    batch: PackedBatch,
    *,
    with_entropy: bool = False,
    autocast_dtype: torch.dtype | None = None,
    temperature: float = 1.0,
    share_prefix: bool = True,
) -> tuple[Tensor, Tensor | None]:
    """log π(y_t | prompt, y_<t) of each response token, (B, K) float32, and optionally the
    entropy of π at each of those positions (B, K); entries outside ``response_mask`` are
    meaningless. π is softmax(logits / ``temperature``): the distribution responses sampled at
    that temperature came from. Only the K positions that predict response tokens get logits
    (``logits_to_keep``), which saves the vocabulary projection of the prompt, and with
    ``share_prefix`` the prompt prefix all rows share runs once (the same values up to float
    rounding)."""
    if temperature <= 0:
        raise ValueError(f"log-probs need a temperature > 0, got {temperature}")
    device = next(model.parameters()).device
    batch = batch.to(device)
    width = batch.width
    with autocast(device, autocast_dtype):
        logits = _response_logits(model, batch, share_prefix)
    logits = logits.float()
    if temperature != 1.0:
        logits = logits / temperature
    labels = batch.input_ids[:, -width:]
    if not with_entropy:
        # Fused log-softmax + gather (cheapest forward and backward over the vocabulary).
        nll = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="none"
        )
        return -nll.view(labels.shape), None
    log_p = torch.log_softmax(logits, dim=-1)
    log_prob = log_p.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    entropy = -(log_p.exp() * log_p).sum(-1)
    return log_prob, entropy


@torch.no_grad()
def sample_log_probs(
    model: torch.nn.Module,
    samples: Sequence[StepSample],
    pad_id: int,
    *,
    micro_batch_size: int = 16,
    autocast_dtype: torch.dtype | None = None,
    temperature: float = 1.0,
    share_prefix: bool = True,
) -> tuple[list[list[float]], list[float]]:
    """Per sample: the log-probs of its response tokens under ``model`` at ``temperature``,
    and their mean entropy. Samples are batched by length (less padding); results keep the
    input order."""
    was_training = model.training
    model.eval()
    log_probs: list[list[float]] = [[] for _ in samples]
    entropies: list[float] = [0.0 for _ in samples]
    order = sorted(
        range(len(samples)),
        key=lambda i: len(samples[i].prompt_ids) + len(samples[i].response_ids),
    )
    try:
        for start in range(0, len(order), micro_batch_size):
            chunk = order[start : start + micro_batch_size]
            batch = pack_pairs(
                [samples[i].prompt_ids for i in chunk],
                [samples[i].response_ids for i in chunk],
                pad_id,
            )
            log_prob, entropy = response_log_probs(
                model, batch, with_entropy=True, autocast_dtype=autocast_dtype,
                temperature=temperature, share_prefix=share_prefix,
            )
            for row, i in enumerate(chunk):
                n = len(samples[i].response_ids)
                log_probs[i] = log_prob[row, batch.width - n :].cpu().tolist()
                entropies[i] = float(entropy[row, batch.width - n :].mean()) if n else 0.0
    finally:
        model.train(was_training)
    return log_probs, entropies


def score_samples(
    model: torch.nn.Module,
    samples: Sequence[StepSample],
    pad_id: int,
    *,
    micro_batch_size: int = 16,
    autocast_dtype: torch.dtype | None = None,
    temperature: float = 1.0,
    share_prefix: bool = True,
) -> None:
    """Fill each sample's ``old_log_probs`` and ``entropy`` (mean over its tokens, at
    ``temperature``) in place."""
    log_probs, entropies = sample_log_probs(
        model, samples, pad_id, micro_batch_size=micro_batch_size,
        autocast_dtype=autocast_dtype, temperature=temperature, share_prefix=share_prefix,
    )
    for sample, lp, ent in zip(samples, log_probs, entropies, strict=True):
        sample.old_log_probs, sample.entropy = lp, ent
