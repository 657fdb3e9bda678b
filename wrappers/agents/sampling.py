"""Sampling from a local causal LM exactly as asked, one random stream per sequence.

Holds :class:`SamplingParams` (temperature, top-p, top-k, response budget),
:func:`sampling_probs` (the distribution a row is sampled from), :func:`sample_tokens` (one
token per row, each row from its own ``torch.Generator``), :func:`eos_token_ids` (the tokens
that end a response), :class:`PrefixCache` (the KV of a shared prompt prefix, kept across
calls), :class:`TokenScores` (each sampled token's log-prob and the entropy it was drawn with,
what an RL trainer would otherwise recompute in a forward pass), :func:`generate_tokens`, the
KV-cache decode loop, and :func:`generate_batched` (it in length-sorted chunks), what the
``hf`` agent and the trainer's ``hf`` generation backend share.

Why a loop of our own rather than transformers' ``generate``: ``generate`` fills every sampling
field left unset with its library defaults (top-k 50 in transformers 5) or the model's own
``generation_config``, so the distribution sampled silently differs from the one a trainer
differentiates; and it draws every row from one global RNG, so a sequence's tokens depend on
which other sequences share its batch. Here the settings are exactly :class:`SamplingParams`,
and each row has its own seed, so a sequence is the same whatever the batch size, the order of
requests or the point a run was resumed from (up to floating-point ties).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

__all__ = [
    "PrefixCache",
    "SamplingParams",
    "TokenScores",
    "common_length",
    "eos_token_ids",
    "expanded_cache",
    "generate_batched",
    "generate_tokens",
    "prefix_kv",
    "sample_tokens",
    "sampling_probs",
]


@dataclass(frozen=True)
class SamplingParams:
    """How responses are sampled.

    Attributes:
        temperature: divides the logits; 0 decodes greedily.
        top_p: nucleus mass (1.0 = off): keep the most likely tokens until their mass reaches
            ``top_p`` (at least one).
        top_k: keep the k most likely tokens (0 = off).
        max_new_tokens: response budget in tokens.

    >>> SamplingParams(temperature=0.6, top_p=0.95, top_k=20).truncated
    True
    >>> SamplingParams().truncated
    False
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 256

    def __post_init__(self) -> None:
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.top_k < 0:
            raise ValueError(f"invalid sampling settings {self}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")

    @property
    def truncated(self) -> bool:
        """Whether top-p or top-k cut the softmax (the sampled distribution is not π/T)."""
        return self.top_p < 1.0 or self.top_k > 0


def sampling_probs(logits: Tensor, sampling: SamplingParams) -> Tensor:
    """(B, V) probabilities each row is sampled from: softmax(logits / T), then top-k, then
    top-p (the order of transformers' and vLLM's samplers), renormalised. Greedy settings give
    a one-hot row.

    >>> p = sampling_probs(torch.tensor([[2.0, 1.0, 0.0, -1.0]]), SamplingParams(top_k=2))
    >>> [round(x, 3) for x in p[0].tolist()]
    [0.731, 0.269, 0.0, 0.0]
    """
    logits = logits.float()
    if sampling.temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    logits = logits / sampling.temperature
    if 0 < sampling.top_k < logits.shape[-1]:
        kth = torch.topk(logits, sampling.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if sampling.top_p < 1.0:
        sorted_probs, order = torch.sort(probs, dim=-1, descending=True)
        # Keep a token while the mass of the tokens before it is below top_p (the first always).
        drop_sorted = sorted_probs.cumsum(-1) - sorted_probs >= sampling.top_p
        drop_sorted[..., 0] = False
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        probs = probs.masked_fill(drop, 0.0)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def sample_tokens(
    logits: Tensor, sampling: SamplingParams, generators: Sequence[torch.Generator]
) -> Tensor:
    """One token id per row of ``logits`` (B, V), row ``i`` drawn with ``generators[i]``
    (generators on the logits' device).

    Inverse-CDF sampling: one uniform draw per row from its own generator, then one batched
    search of the rows' cumulative distributions (in float64), several times faster than a
    ``torch.multinomial`` call per row over a large vocabulary.
    """
    if sampling.temperature == 0:
        return logits.argmax(-1)
    cdf = sampling_probs(logits, sampling).double().cumsum(-1)
    uniform = torch.stack([
        torch.rand((), generator=g, dtype=torch.float64, device=logits.device)
        for g in generators
    ])
    target = (uniform * cdf[:, -1]).unsqueeze(-1)
    tokens = torch.searchsorted(cdf, target, right=True).squeeze(-1)
    return tokens.clamp_max(logits.shape[-1] - 1)


class TokenScores:
    """Per prompt of a decode call: each sampled token's log-prob under softmax(logits / T) and
    the entropy of that distribution (the full softmax at the sampling temperature, whatever
    top-p / top-k cut from it).

    The same log-prob a forward pass over the finished response gives, up to float rounding
    between the decode's KV cache and a full pass: an RL trainer reads π_old from here instead
    of a separate forward (``tests/test_sampling.py`` bounds the mismatch).
    """

    def __init__(self, n: int) -> None:
        self.log_probs: list[list[float]] = [[] for _ in range(n)]
        self.entropies: list[list[float]] = [[] for _ in range(n)]

    def add(self, rows: Sequence[int], logits: Tensor, tokens: Tensor, temperature: float) -> None:
        """Record the step's ``tokens`` (B,) sampled from ``logits`` (B, V) for prompts
        ``rows``."""
        log_p = torch.log_softmax(logits.float() / (temperature or 1.0), dim=-1)
        chosen = log_p.gather(-1, tokens.unsqueeze(-1)).squeeze(-1).tolist()
        entropy = (-(log_p.exp() * log_p).sum(-1)).tolist()
        for row, index in enumerate(rows):
            self.log_probs[index].append(chosen[row])
            self.entropies[index].append(entropy[row])

    def take(self, other: TokenScores, rows: Sequence[int]) -> None:
        """Copy ``other``'s prompt ``j`` into this one's prompt ``rows[j]``."""
        for j, index in enumerate(rows):
            self.log_probs[index] = other.log_probs[j]
            self.entropies[index] = other.entropies[j]


def eos_token_ids(model: torch.nn.Module, tokenizer: Any) -> list[int]:
    """The tokens that end a response: the tokenizer's and the generation config's EOS."""
    ids = {int(tokenizer.eos_token_id)}
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(int(i) for i in configured)
    return sorted(ids)


def common_length(rows: Sequence[Sequence[int]]) -> int:
    """Length of the longest prefix all ``rows`` share."""
    first, length = rows[0], min(len(r) for r in rows)
    for row in rows[1:]:
        length = next((i for i in range(length) if row[i] != first[i]), length)
    return length


class PrefixCache:
    """The KV cache of the prompt prefix the last batch shared, for a model that does not
    change (an evaluation agent's), reused by later :func:`generate_tokens` calls as far as
    their prompts match it: the preamble of every prompt, an episode's earlier turns.

    The prefix is cached in whole blocks of ``block_tokens``, block ``k`` always computed from
    the blocks before it, so a block's KV is a function of the tokens up to its end, whatever
    the cache held before: a call gives the same numbers, to the last bit, after any earlier
    calls (an evaluation between RL steps, a resume). The shared tokens past the last whole
    block are prefilled with each row's own. Blocks of 64 keep SmolLM2's one-episode
    evaluation 1.14x faster than without the cache (16-token blocks made it 0.75x: a pass per
    block reads every weight).

    Attributes:
        block_tokens: the tokens of one cached block; a shorter shared prefix is not cached.
        reused: prompt tokens whose KV came from the cache instead of a forward pass.
    """

    def __init__(self, block_tokens: int = 64) -> None:
        self.block_tokens = block_tokens
        self.reused = 0
        self.ids: list[int] = []
        self.kv: list[tuple[Tensor, Tensor]] = []
        self.enabled = True

    def lookup(self, model: torch.nn.Module, prompts: Sequence[Sequence[int]]) -> tuple[int, Any]:
        """``(n, cache)``: the KV cache of the first ``n`` tokens every prompt shares (whole
        blocks, expanded to the batch; at least one token of each prompt is left to prefill),
        or ``(0, None)`` where no whole block is shared."""
        block = self.block_tokens
        common = min(common_length(prompts), min(len(p) for p in prompts) - 1)
        common -= common % block
        if not self.enabled or common == 0:
            return 0, None
        known = min(common_length([self.ids, prompts[0]]) if self.ids else 0, common)
        known -= known % block
        kv = [(k[:, :, :known], v[:, :, :known]) for k, v in self.kv]
        for start in range(known, common, block):
            kv = prefix_kv(model, prompts[0][start : start + block], kv)
            if kv is None:
                self.enabled = False  # sliding windows and the like: not sliced here
                return 0, None
        self.ids, self.kv = list(prompts[0][:common]), kv
        self.reused += known * len(prompts)
        return common, expanded_cache(model, kv, len(prompts))


def prefix_kv(
    model: torch.nn.Module, ids: Sequence[int], past: list[tuple[Tensor, Tensor]] | None = None
) -> list[tuple[Tensor, Tensor]] | None:
    """Each layer's (keys, values) of one sequence, ``ids`` run after ``past`` (the KV of
    the tokens before them, or none); gradients flow when the caller allows them. ``None``
    for a model whose cache layers are not plain (sliding windows and the like)."""
    from transformers.cache_utils import DynamicLayer

    device = next(model.parameters()).device
    known = past[0][0].shape[2] if past else 0
    result = model(
        input_ids=torch.as_tensor([list(ids)], device=device),
        position_ids=torch.arange(known, known + len(ids), device=device)[None],
        past_key_values=expanded_cache(model, past, 1) if known else None,
        use_cache=True, logits_to_keep=1,
    )
    layers = result.past_key_values.layers
    if not all(type(layer) is DynamicLayer for layer in layers):
        return None
    return [(layer.keys, layer.values) for layer in layers]


def expanded_cache(model: torch.nn.Module, kv: list[tuple[Tensor, Tensor]], batch: int) -> Any:
    """A KV cache holding one sequence's ``kv`` for each of ``batch`` rows (views, no copy:
    a gradient into any row flows back to ``kv``)."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    for index, (keys, values) in enumerate(kv):
        cache.update(keys.expand(batch, -1, -1, -1), values.expand(batch, -1, -1, -1), index)
    return cache


@torch.no_grad()
def generate_tokens(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    sampling: SamplingParams,
    seeds: Sequence[int],
    *,
    pad_id: int,
    eos_ids: Sequence[int],
    autocast_dtype: torch.dtype | None = None,
    prefix_cache: PrefixCache | None = None,
    scores: TokenScores | None = None,
) -> list[list[int]]:
    """Sample one response per prompt with a KV cache; ``seeds[i]`` seeds row ``i``'s stream.

    Prompts are left-padded into one batch; a row stops at its first end-of-sequence token
    (kept in the response) or after ``sampling.max_new_tokens`` tokens, and finished rows leave
    the batch. With ``prefix_cache``, the prompt prefix every prompt shares is computed once
    (or taken from the cache, as far as it matches) and only the rest is prefilled per row.
    ``scores`` (one entry per prompt) records every sampled token's log-prob and entropy.
    The model is put in eval mode for the call and restored after.
    """
    if len(seeds) != len(prompts):
        raise ValueError(f"{len(prompts)} prompts but {len(seeds)} seeds")
    if not prompts:
        return []
    if any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt needs at least one token")
    device = next(model.parameters()).device
    generators = [torch.Generator(device).manual_seed(int(s) % 2**63) for s in seeds]
    eos = torch.as_tensor(sorted(set(eos_ids)), dtype=torch.long, device=device)
    out: list[list[int]] = [[] for _ in prompts]
    live = list(range(len(prompts)))  # batch row -> prompt index
    was_training = model.training
    model.eval()
    try:
        with torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            shared, cache = prefix_cache.lookup(model, prompts) if prefix_cache else (0, None)
            width = max(len(p) for p in prompts) - shared
            ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(prompts), shared + width), dtype=torch.long)
            mask[:, :shared] = 1
            for row, prompt in enumerate(prompts):
                rest = list(prompt[shared:])
                ids[row, width - len(rest) :] = torch.as_tensor(rest, dtype=torch.long)
                mask[row, shared + width - len(rest) :] = 1
            ids, mask = ids.to(device), mask.to(device)
            positions = (mask.cumsum(-1) - 1).clamp_min(0)[:, shared:]
            step: dict[str, Any] = {"input_ids": ids, "position_ids": positions}
            for _ in range(sampling.max_new_tokens):
                result = model(
                    **step, attention_mask=mask, past_key_values=cache, use_cache=True,
                    logits_to_keep=1,
                )
                cache = result.past_key_values
                logits = result.logits[:, -1, :]
                tokens = sample_tokens(logits, sampling, [generators[i] for i in live])
                if scores is not None:
                    scores.add(live, logits, tokens, sampling.temperature)
                finished = torch.isin(tokens, eos)
                for row, index in enumerate(live):
                    out[index].append(int(tokens[row]))
                keep = (~finished).nonzero().flatten()
                if keep.numel() == 0:
                    break
                if keep.numel() < len(live):
                    cache.batch_select_indices(keep)
                    live = [live[int(k)] for k in keep]
                    tokens, mask, positions = tokens[keep], mask[keep], positions[keep]
                positions = positions[:, -1:] + 1
                mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
                step = {"input_ids": tokens.unsqueeze(-1), "position_ids": positions}
    finally:
        model.train(was_training)
    return out


def generate_batched(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    sampling: SamplingParams,
    seeds: Sequence[int],
    *,
    batch_size: int,
    pad_id: int,
    eos_ids: Sequence[int],
    autocast_dtype: torch.dtype | None = None,
    prefix_cache: PrefixCache | None = None,
    scores: TokenScores | None = None,
) -> list[list[int]]:
    """:func:`generate_tokens` over chunks of ``batch_size`` prompts, sorted by length first
    (less padding); each row samples from its own seed, so chunking changes only speed."""
    if len(seeds) != len(prompts):
        raise ValueError(f"{len(prompts)} prompts but {len(seeds)} seeds")
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    out: list[list[int]] = [[] for _ in prompts]
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        part = TokenScores(len(chunk)) if scores is not None else None
        responses = generate_tokens(
            model, [prompts[i] for i in chunk], sampling, [seeds[i] for i in chunk],
            pad_id=pad_id, eos_ids=eos_ids, autocast_dtype=autocast_dtype,
            prefix_cache=prefix_cache, scores=part,
        )
        for i, ids in zip(chunk, responses, strict=True):
            out[i] = ids
        if scores is not None:
            scores.take(part, chunk)
    return out
