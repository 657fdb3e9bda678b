"""The local transformers agent on the real embedded SmolLM2-135M-Instruct weights."""

from __future__ import annotations

import pytest

from arlarena_baselines.evaluation import EvalConfig, evaluate, read_records
from wrappers.agents import AgentRequest, HFAgent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def greedy() -> HFAgent:
    return HFAgent(max_new_tokens=16, temperature=0.0)


def test_generates_from_the_embedded_weights(greedy):
    prompts = ["What is 2 + 2? Answer with one number.", "Name a colour."]
    out = greedy.act([AgentRequest(p) for p in prompts])
    assert len(out) == 2 and all(isinstance(o, str) and o.strip() for o in out)
    assert "4" in out[0]
    assert greedy.usage()["completion_tokens"] > 0


def test_left_padded_batches_match_single_prompts(greedy):
    short, long = "Say hi.", "Write one short sentence about boxes, walls and targets in a maze."
    batched = greedy.act([AgentRequest(short), AgentRequest(long)])
    assert batched == [greedy.act([AgentRequest(short)])[0], greedy.act([AgentRequest(long)])[0]]


def test_drives_a_sokoban_episode_through_the_wrappers(greedy, tmp_path):
    # Three turns show the first prompt and later ones with history; Sokoban's 15 add only time.
    records = evaluate(EvalConfig(episodes=1, max_turns=3), greedy, tmp_path / "r.jsonl",
                       progress=False)
    (episode,) = records
    turns = [r for r in read_records(tmp_path / "r.jsonl") if r["type"] == "turn"]
    assert len(turns) == episode["turns"] >= 1
    assert all(t["prompt"].startswith("\nYou are an expert agent") for t in turns)  # the study's
    assert all(isinstance(t["format_ok"], bool) for t in turns)


def test_the_embedded_model_saves_and_reloads_as_a_plain_checkpoint(greedy, tmp_path):
    """The GGUF is unpacked on load, so checkpoints (and vLLM's copy) are plain safetensors."""
    import torch
    from transformers import AutoModelForCausalLM

    greedy.model.save_pretrained(tmp_path)
    assert "quantization_config" not in (tmp_path / "config.json").read_text()
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        reloaded = AutoModelForCausalLM.from_pretrained(tmp_path)(ids).logits
        assert torch.equal(reloaded, greedy.model(ids).logits)
