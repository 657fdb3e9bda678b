"""Helpers for the sampling tests: where sampled tokens rank under the model's full softmax."""

from __future__ import annotations

import torch

from arlarena_baselines.rollout import pack_pairs


def token_ranks(model, prompts, responses, pad_id: int) -> list[int]:
    """The rank (0 = most likely) of every response token under the full softmax of ``model``
    at its position, teacher-forced."""
    batch = pack_pairs(prompts, responses, pad_id)
    with torch.no_grad():
        logits = model.eval()(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            position_ids=batch.position_ids,
        ).logits.float()
    width = batch.width
    logits = logits[:, -width - 1 : -1]
    labels = batch.input_ids[:, -width:]
    chosen = logits.gather(-1, labels.unsqueeze(-1))
    ranks = (logits > chosen).sum(-1)
    return [int(r) for r, m in zip(ranks.flatten(), batch.response_mask.flatten(), strict=True)
            if m > 0]
