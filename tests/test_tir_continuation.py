"""The trainer's side of TIR Math's protocol: a continued response's token ids, turn by turn.

A scripted episode (math-coder's replies, tokenised as if the policy had sampled them) runs
through the real collector, env and SmolLM2 tokenizer, and the real tiny model scores it; the
same episode goes to a results file, as evaluation writes it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from arlarena_baselines.evaluation import EvalConfig, ResultsLog, read_records
from arlarena_baselines.rollout import (
    EnvFactory,
    GenerationBackend,
    InProcessEnvPool,
    ModelResponder,
    SamplingParams,
    Task,
    collect,
    encode_prompt,
    score_samples,
)
from arlarena_baselines.rollout.continuation import continue_ids, kept_tokens
from arlarena_baselines.trainer.config import ModelConfig
from arlarena_baselines.trainer.models import load_policy
from wrappers.agents.math_scripted import MathCoderAgent

pytestmark = pytest.mark.usefixtures("isolated_cache")

TIR = EnvFactory("math", {"dataset": "arithmetic", "sandbox_limits": {"wall_time_s": 5.0}})


@pytest.fixture(scope="module")
def tiny():
    model, tokenizer = load_policy(ModelConfig(name="tiny"))
    return model.eval(), tokenizer


class ScriptedBackend(GenerationBackend):
    """Answers each prompt with math-coder's reply to its text, as token ids ending in EOS."""

    def __init__(self, tokenizer, question: str) -> None:
        self.tokenizer, self.question = tokenizer, question
        self.prompts: list[list[int]] = []

    def generate(self, prompts: Sequence[Sequence[int]], sampling, seeds) -> list[list[int]]:
        replies = []
        for prompt in prompts:
            self.prompts.append(list(prompt))
            text = MathCoderAgent().turn(self.tokenizer.decode(list(prompt)), self.question)
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            replies.append([*ids, self.tokenizer.eos_token_id])
        return replies


def test_kept_tokens_are_a_prefix_of_the_generated_ones(tiny):
    _, tokenizer = tiny
    text = "Compute:\n```py\nprint(1)\n```\n\nThen more."
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    for cut in range(len(text) + 1):
        count = kept_tokens(tokenizer, ids, text[:cut])
        assert text[:cut].startswith(tokenizer.decode(ids[:count]))
        assert count == len(ids) or len(tokenizer.decode(ids[: count + 1])) > cut or not \
            text[:cut].startswith(tokenizer.decode(ids[: count + 1]))
    kept, following = continue_ids(tokenizer, [7, 8], ids, text, 27, "\nResult: 1\n")
    assert following[:2] == [7, 8] and following[2 : 2 + len(kept)] == kept
    assert tokenizer.decode(following[2:]) == text[:27] + "\nResult: 1\n"


def test_a_continued_episode_extends_its_prompt_ids_and_masks_the_tool_output(tiny, tmp_path):
    model, tokenizer = tiny
    results = tmp_path / "tir.jsonl"  # evaluation's consumer of the same episode
    config = EvalConfig(TIR)
    with InProcessEnvPool(TIR, 1) as pool, ResultsLog(results, config, "coder", {}) as log:
        question = pool.reset([0], [4])[0][1]["task"]
        backend = ScriptedBackend(tokenizer, question)
        responder = ModelResponder(backend, tokenizer, SamplingParams(max_new_tokens=512))
        rollout = collect(
            pool, responder, [Task("t", 4)], 1, also=[log],
            scorer=lambda s: score_samples(model, s, tokenizer.pad_token_id, micro_batch_size=2),
        )
    first, second = rollout.samples
    episode = rollout.episodes[0]
    assert episode.won and episode.turns == 2 and (first.reward, second.reward) == (0.0, 1.0)
    # Turn 1: the user prompt; its sample keeps the response up to the end of the block only.
    assert first.prompt_ids == encode_prompt(tokenizer, first.prompt) == backend.prompts[0]
    response = tokenizer.decode(first.response_ids)
    assert response.endswith("```") and "Once it has run" not in response
    assert "Once it has run" in first.response
    # Turn 2: the same sequence continued; the tool output is prompt, never response.
    tool_output = "\nCode execution result: 1380\n\n"
    appended = tokenizer(tool_output, add_special_tokens=False)["input_ids"]
    assert second.prompt_ids == [*first.prompt_ids, *first.response_ids, *appended]
    assert backend.prompts[1] == second.prompt_ids
    assert tokenizer.decode(second.response_ids[:-1]).endswith("final_answer('1380')\n```")
    assert tokenizer.eos_token_id not in first.response_ids, "the response went on"
    assert second.response_ids[-1] == tokenizer.eos_token_id, "the episode ended: the model stopped"
    assert episode.info["response_prefix"] == (
        tokenizer.decode([*first.response_ids, *appended, *second.response_ids[:-1]])
        + "\nCode execution result: \\boxed{1380}\n\n")
    # Both turns were scored by the tiny model, one log-prob per kept response token.
    for sample in (first, second):
        assert len(sample.old_log_probs) == len(sample.response_ids) > 0
    assert rollout.generated_tokens > len(first.response_ids) + len(second.response_ids)
    # The results file has the episode as `arlarena eval` writes it: the texts the env got.
    records = list(read_records(results))
    turns = [r for r in records if r["type"] == "turn"]
    assert [(t["prompt"], t["response"]) for t in turns] == [
        (first.prompt, first.response), (second.prompt, second.response)]
    assert second.prompt.endswith(tool_output) and turns[1]["won"]
    (done,) = [r for r in records if r["type"] == "episode"]
    assert (done["won"], done["turns"], done["usage"]["requests"]) == (True, 2, 2.0)
    assert done["usage"]["completion_tokens"] == rollout.generated_tokens
