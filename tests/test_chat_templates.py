"""Real models' chat templates: keyword arguments and a prefilled reply opening.

Two chat templates of our own on the SmolLM2 tokenizer stand in for the thinking models':
``ALWAYS_THINK`` ends the generation prompt with ``<think>\\n`` (reasoning models that always
think), ``QWEN3_LIKE`` takes ``enable_thinking`` and, when it is false, prefills an empty think
block (Qwen3's behaviour). The format check must see the prefill plus the response, and the
trainer's response tokens must stay exactly what was generated.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence

import pytest

from arlarena_baselines.rollout import EnvFactory, InProcessEnvPool, SamplingParams, Task, collect
from arlarena_baselines.rollout.collector import ModelResponder
from arlarena_baselines.trainer.config import ModelConfig
from arlarena_baselines.trainer.models import smollm2_tokenizer, tiny_model
from wrappers.agents.chat import ChatFormat, encode_prompt, generation_prefill, strip_prefill
from wrappers.format import parse_response

pytestmark = pytest.mark.usefixtures("isolated_cache")

_TURNS = ("{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
          "{% endfor -%}")
ALWAYS_THINK = _TURNS + "{%- if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"
QWEN3_LIKE = _TURNS + (
    "{%- if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% endif %}{% endif %}"
)
OPEN, EMPTY = "<think>\n", "<think>\n\n</think>\n\n"
THINKING_OFF = {"enable_thinking": False}


def _tokenizer(template: str | None):
    tokenizer = copy.deepcopy(smollm2_tokenizer())
    if template is not None:
        tokenizer.chat_template = template
    return tokenizer


@pytest.fixture(scope="module")
def always_think():
    return _tokenizer(ALWAYS_THINK)


@pytest.fixture(scope="module")
def qwen3_like():
    return _tokenizer(QWEN3_LIKE)


def test_the_prefill_is_read_off_the_template(always_think, qwen3_like):
    assert generation_prefill(_tokenizer(None)) == ""  # SmolLM2's own ChatML template
    assert generation_prefill(always_think) == OPEN
    assert generation_prefill(qwen3_like) == ""
    assert generation_prefill(qwen3_like, THINKING_OFF) == EMPTY
    # The keyword arguments reach the template: the prompt's tokens end with the prefill.
    ids = encode_prompt(qwen3_like, "push the box", THINKING_OFF)
    header = "push the box<|im_end|>\n<|im_start|>assistant\n"
    assert qwen3_like.decode(ids).endswith(header + EMPTY)
    assert not qwen3_like.decode(encode_prompt(qwen3_like, "push the box")).endswith(EMPTY)


@pytest.mark.parametrize(("template", "kwargs", "prefill", "target"), [
    (ALWAYS_THINK, {}, OPEN, "The box is right of me.</think><action>right</action>"),
    (QWEN3_LIKE, THINKING_OFF, EMPTY, "<action>right</action>"),
    (QWEN3_LIKE, {}, "", "<think>The box is right of me.</think><action>right</action>"),
])
def test_cloned_responses_are_what_the_model_writes_after_the_prefill(
    template, kwargs, prefill, target
):
    chat = ChatFormat(_tokenizer(template), kwargs)
    response = "<think>The box is right of me.</think><action>right</action>"
    ids = chat.response_ids(response)
    assert chat.prefill == prefill
    assert ids[-1] == chat.tokenizer.eos_token_id
    assert chat.tokenizer.decode(ids[:-1]) == target
    assert parse_response(chat.reply(chat.tokenizer.decode(ids[:-1])), ["right"]).format_ok


def test_strip_prefill_leaves_other_responses_alone():
    assert strip_prefill("<action>up</action>", OPEN) == "<action>up</action>"
    assert strip_prefill("<think>a</think><action>up</action>", "") == (
        "<think>a</think><action>up</action>"
    )


class ScriptedBackend:
    """A generation backend answering every prompt with the same token ids (a scripted
    policy), so what reaches the env is known exactly."""

    def __init__(self, ids: list[int]) -> None:
        self.ids = ids
        self.prompts: list[list[int]] = []

    def generate(self, prompt_ids: Sequence[Sequence[int]], sampling: SamplingParams,
                 seeds: Sequence[int]) -> list[list[int]]:
        self.prompts += [list(p) for p in prompt_ids]
        return [list(self.ids) for _ in prompt_ids]


@pytest.mark.parametrize(("template", "kwargs", "generated"), [
    (ALWAYS_THINK, {}, "The box is left of me.</think><action>left</action>"),
    (QWEN3_LIKE, THINKING_OFF, "<action>left</action>"),
])
def test_rollouts_check_the_prefill_plus_the_response(template, kwargs, generated):
    tokenizer = _tokenizer(template)
    ids = tokenizer(generated, add_special_tokens=False)["input_ids"]
    pool = InProcessEnvPool(EnvFactory("sokoban"), 2)

    def run(chat_kwargs):
        backend = ScriptedBackend(ids)
        responder = ModelResponder(backend, tokenizer, SamplingParams(), chat_kwargs)
        return collect(pool, responder, [Task("g", 0)], 2, max_turns=2), backend

    rollout, backend = run(kwargs)
    for sample in rollout.samples:
        assert sample.response_ids == ids  # exactly what was generated, no prefill tokens
        assert sample.response == generation_prefill(tokenizer, kwargs) + generated
        assert sample.valid
        assert tokenizer.decode(sample.prompt_ids).endswith(generation_prefill(tokenizer, kwargs))
    assert backend.prompts[0] == rollout.samples[0].prompt_ids
    if kwargs:  # without the keyword arguments the template writes no think block
        bare, _ = run({})
        assert not any(s.valid for s in bare.samples)
    pool.close()


def test_the_hf_agent_returns_the_whole_reply(tmp_path, qwen3_like):
    from wrappers.agents.base import AgentRequest
    from wrappers.agents.hf import HFAgent

    model = tiny_model(ModelConfig(name="tiny"), qwen3_like)
    model.save_pretrained(tmp_path)
    qwen3_like.save_pretrained(tmp_path)
    agent = HFAgent(str(tmp_path), max_new_tokens=3, chat_template_kwargs=THINKING_OFF)
    (reply,) = agent.act([AgentRequest("push the box", {}, None, 0, "e0", 0)])
    generated = reply.removeprefix(EMPTY)
    assert reply.startswith(EMPTY) and EMPTY not in generated
    plain = HFAgent(str(tmp_path), max_new_tokens=3)
    assert not plain.act([AgentRequest("push the box", {}, None, 0, "e0", 0)])[0].startswith(EMPTY)


def test_the_openrlhf_agent_checks_the_prefill_plus_the_response(monkeypatch, qwen3_like):
    pytest.importorskip("ray")
    pytest.importorskip("openrlhf.utils.agent")
    from tests.openrlhf_cpu import gpu_only_stubs

    with gpu_only_stubs():
        from openrlhf.trainer.ray.vllm_engine import _load_agent_executor
    from arlarena_baselines.openrlhf import turn_logs
    from arlarena_baselines.openrlhf.launch import AGENT_FILE
    from arlarena_baselines.openrlhf.settings import Task as LabelTask
    from tests.openrlhf_scripted import run_executor

    monkeypatch.setenv("ARLARENA_ENV", "sokoban")
    monkeypatch.setenv("ARLARENA_MAX_TURNS", "2")
    monkeypatch.setenv("ARLARENA_CHAT_TEMPLATE_KWARGS", '{"enable_thinking": false}')
    executor = _load_agent_executor(str(AGENT_FILE))
    out = asyncio.run(run_executor(executor, qwen3_like, LabelTask(0), ["<action>up</action>"] * 2))
    assert out["extra_logs"][turn_logs.VALID_RATIO] == 1.0
    text = qwen3_like.decode(out["observation_tokens"])
    assert text.count(EMPTY + "<action>up</action>") == 2
