"""docs/openrlhf.md's sizing table: episode tokens as OpenRLHF's sequence holds them, GPU memory."""

from __future__ import annotations

import copy

import pytest

from arlarena_baselines.openrlhf import sizing
from arlarena_baselines.openrlhf.chat_turns import ChatTurns
from arlarena_baselines.openrlhf.launch import ENVS
from arlarena_baselines.trainer.models import smollm2_tokenizer

CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def test_memory_arithmetic_by_hand():
    m = sizing.memory_gb(8192, entropy=True)
    assert m["states"] == pytest.approx(16 * 4.02e9 / 8 / 1e9)  # 8.04 GB
    assert m["reference"] == pytest.approx(2 * 4.02e9 / 8 / 1e9)
    assert m["logits"] == pytest.approx(8192 * 151936 * 10 / 1e9)  # bf16 + fp32 + its gradient
    assert m["entropy"] == pytest.approx(8192 * 151936 * 8 / 1e9)
    assert m["activations"] == pytest.approx((8192 * 2560 * 2 * 36
                                              + 8192 * (6 * 2560 + 3 * 9728) * 2) / 1e9)
    assert m["total"] == pytest.approx(33.69, abs=0.01)
    assert sizing.memory_gb(8192, entropy=False)["entropy"] == 0


def test_every_env_as_launched_fits_a_40_gb_gpu_and_alfworld_needs_its_ring():
    for run in ENVS.values():
        assert sizing.memory_gb(run.max_len // run.ring_attn_size, entropy=True)["total"] < 40
    assert sizing.memory_gb(ENVS["alfworld"].max_len, entropy=True)["total"] > 80
    assert sizing.memory_gb(ENVS["alfworld"].max_len, entropy=False)["total"] > 40


def test_the_counted_pieces_are_the_sequence_openrlhf_builds_for_chatml():
    tokenizer = copy.deepcopy(smollm2_tokenizer())
    tokenizer.chat_template = CHATML
    chat = ChatTurns(tokenizer)
    prompts, responses = ["look around", "go north", "take key"], ["a", "b", "c"]
    built = chat.first(prompts[0])
    for turn, response in enumerate(responses):
        built += response + tokenizer.eos_token
        if turn + 1 < len(prompts):
            built += chat.next(prompts[turn + 1])
    assert "".join(sizing.chatml_pieces(prompts, responses)) == built


def test_measured_episodes_and_their_projection():
    name, count = sizing.token_counter()
    row = sizing.measure("sokoban", count, episodes=2)
    assert name in ("Qwen", "SmolLM2") and row.episodes == 2 and row.turns >= 1
    assert row.total > row.first > 0 and row.feedback > 0 and row.response > 0
    turn = row.turns_to_max_len(1024)
    assert turn is None or row.budget_tokens(turn, 1024) > row.max_len >= row.budget_tokens(
        turn - 1, 1024)
    table = sizing.sizing_table([row])
    assert table.count("\n") == 2 and "| sokoban |" in table
