"""Every chat template shape: the token sequence OpenRLHF's executor builds is the conversation.

vLLM stops on the tokenizer's ``eos_token`` and on every ``eos_token_id`` of the model's
generation config, and keeps the stop token in the response. The shapes below are written
here (not downloaded): SmolLM2's tokenizer with the special tokens, chat template, eos token
and ``generation_config.json`` of each family. For each, a scripted episode through the agent
file as OpenRLHF loads it must give exactly ``apply_chat_template`` of the conversation, each
action range one response and its stop token.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

pytest.importorskip("openrlhf.utils.agent")

from transformers import AutoTokenizer, GenerationConfig

from arlarena_baselines.openrlhf.chat_turns import ChatTurns, generation_stop_ids
from arlarena_baselines.openrlhf.settings import AgentSettings, Task
from arlarena_baselines.trainer.models import smollm2_tokenizer
from tests.openrlhf_scripted import ScriptedEngine, play
from wrappers.agents.base import make_agent

CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
LLAMA3 = ("<|begin_of_text|>{% for m in messages %}<|start_header_id|>{{ m.role }}"
          "<|end_header_id|>\n\n{{ m.content }}<|eot_id|>{% endfor %}{% if add_generation_prompt %}"
          "<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")
GEMMA = ("<bos>{% for m in messages %}<start_of_turn>"
         "{{ 'model' if m.role == 'assistant' else m.role }}\n{{ m.content }}<end_of_turn>\n"
         "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")

# shape -> (chat template, eos_token, the generation config's eos tokens, the token vLLM
# stops a turn on: the template's end of turn)
SHAPES = {
    "chatml (Qwen3)": (CHATML, "<|im_end|>", ["<|im_end|>"], "<|im_end|>"),
    "Qwen base": (CHATML, "<|endoftext|>", ["<|im_end|>", "<|endoftext|>"], "<|im_end|>"),
    "Llama 3.1": (LLAMA3, "<|eot_id|>", ["<|end_of_text|>", "<|eot_id|>"], "<|eot_id|>"),
    "older Llama 3": (LLAMA3, "<|end_of_text|>", ["<|end_of_text|>", "<|eot_id|>"],
                      "<|eot_id|>"),
    "Gemma": (GEMMA, "<eos>", ["<eos>", "<end_of_turn>"], "<end_of_turn>"),
}
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>",
            "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|end_of_text|>", "<bos>",
            "<eos>", "<start_of_turn>", "<end_of_turn>"]


def shaped(name: str, folder) -> tuple:
    """A tokenizer of ``name``'s shape whose generation config sits beside it, and its stop."""
    template, eos, stops, stop = SHAPES[name]
    smollm2_tokenizer().save_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.add_special_tokens({"additional_special_tokens": SPECIALS})
    tokenizer.chat_template, tokenizer.eos_token = template, eos
    GenerationConfig(eos_token_id=tokenizer.convert_tokens_to_ids(stops)).save_pretrained(folder)
    return tokenizer, tokenizer.convert_tokens_to_ids(stop)


@pytest.mark.parametrize("name", SHAPES)
def test_the_executor_builds_the_conversation_in_every_template(name, tmp_path, monkeypatch):
    from arlarena_baselines.openrlhf.launch import AGENT_FILE
    from tests.openrlhf_cpu import gpu_only_stubs

    with gpu_only_stubs():
        from openrlhf.trainer.ray.vllm_engine import _load_agent_executor

    tokenizer, stop = shaped(name, tmp_path)
    assert generation_stop_ids(tokenizer) == tokenizer.convert_tokens_to_ids(SHAPES[name][2])
    monkeypatch.setenv("ARLARENA_ENV", "sokoban")
    task = Task(3)
    ref = play(AgentSettings.from_environ(), task, make_agent("expert"), malformed_first=True)
    executor = _load_agent_executor(str(AGENT_FILE))
    engine = ScriptedEngine(tokenizer, ref.responses, stop_id=stop)
    out = asyncio.run(executor.execute(
        prompt="p", label=task.label(), sampling_params=SimpleNamespace(max_tokens=None,
                                                                        logprobs=None),
        max_length=32768, hf_tokenizer=tokenizer, llm_engine=engine))

    turns = [(role, text) for p, r in zip(ref.prompts, ref.responses, strict=True)
             for role, text in (("user", p), ("assistant", r))]
    rendered = tokenizer.apply_chat_template([{"role": r, "content": t} for r, t in turns],
                                             tokenize=False)
    tokens = out["observation_tokens"]
    # The executor stops after the last response: the template's text after it is not there.
    closing = SHAPES[name][3] + rendered.rsplit(SHAPES[name][3], 1)[1]
    assert tokenizer.decode(tokens) == rendered.removesuffix(closing) + SHAPES[name][3]
    for (start, end), response in zip(out["action_ranges"], ref.responses, strict=True):
        assert tokenizer.decode(tokens[start:end]) == response + SHAPES[name][3]


@pytest.mark.parametrize("name", ["Qwen base", "older Llama 3", "Gemma"])
def test_the_eos_token_alone_doubles_the_end_of_turn(name, tmp_path):
    tokenizer, _ = shaped(name, tmp_path)
    stop = SHAPES[name][3]
    assert ChatTurns(tokenizer).next("x").startswith(stop)  # what eos_token alone leaves
    assert not ChatTurns(tokenizer, generation_stop_ids(tokenizer)).next("x").startswith(stop)


def test_no_generation_config_means_the_eos_token_alone(tmp_path):
    tokenizer = smollm2_tokenizer()
    assert generation_stop_ids(SimpleNamespace(name_or_path=str(tmp_path))) == []
    assert ChatTurns(tokenizer).next("x") == ChatTurns(tokenizer, []).next("x")
