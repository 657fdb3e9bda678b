"""Text that always encodes: hostile model text and program output through every env, bare and
under ``PromptWrapper``, into the results JSONL, through ``arlarena eval`` end to end and
through the OpenRLHF agent.

The hostile texts are what real models and APIs produce: lone surrogates (JSON can carry
``\\ud800``, an OpenAI-compatible server sends it), surrogate pairs split by a stream, NUL and
other control characters, emoji and CJK outside the Basic Multilingual Plane, and 1 MB strings.
Each must leave every observation inside the env's declared ``observation_space`` (what
Gymnasium's ``check_env`` checks), every string encodable as UTF-8, and legitimate text intact.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.spaces import Text
from gymnasium.spaces.utils import flatten

import arlarena_envs  # noqa: F401  (registers the ids)
from arlarena_baselines.cli import main
from arlarena_baselines.evaluation.results import ResultsWriter, prepare_resume, read_records
from arlarena_envs.base import (
    MAX_ACTION_CHARS,
    TEXT_CHARSET,
    TextSpace,
    clean_text,
    coerce_action,
    text_space,
)
from tests.chat_server import ChatServer
from wrappers import PromptWrapper

EMOJI = "\U0001f600"  # outside the BMP
FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # a ZWJ sequence
RARE_CJK = "\U0002000b"  # CJK Extension B, outside the BMP
LEGIT = f"{EMOJI} {FAMILY} {RARE_CJK} 中文 café \u3000x\u00a0y 𝑥² ∑"
"""Text real models write that must come through unchanged."""

# (payload, what its echo must contain): the hostile texts, and how each one is shown.
PAYLOADS: list[tuple[str, str]] = [
    ("up \ud800", "up \ufffd"),  # a lone surrogate becomes U+FFFD
    ("up \ud83d\ude00", f"up {EMOJI}"),  # a split surrogate pair is joined
    ("up\x00\x07\x1b[0m", "up\\x00\\x07\\x1b[0m"),  # controls are escaped, visibly
    (f"up {LEGIT}", f"up {LEGIT}"),  # legitimate text is kept
    ("line\r\nbreak\rhere", "line\nbreak\nhere"),  # CR LF and CR become LF
    ("x" * 1_000_000, "x" * 1000),
    (EMOJI * 1_000_000, EMOJI * 1000),
    ("\x00" * 1_000_000, "\\x00" * 1000),
]

TIR_KWARGS = {"dataset": "arithmetic", "sandbox_limits": {"wall_time_s": 5.0, "cpu_time_s": 3}}
ENVS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    # name -> (id, gym.make kwargs, reset options)
    "sokoban": ("ARLArena/Sokoban-v0", {}, {}),
    "bandit": ("ARLArena/Bandit-v0", {"rounds": 20}, {}),
    "tir": ("ARLArena/TIRMath-v0", TIR_KWARGS, {}),
    "webshop": ("ARLArena/WebShop-Small-v0", {}, {"split": "eval", "index": 0}),
    "alfworld": ("ARLArena/ALFWorld-v0", {"split": "eval_out_of_distribution"}, {"index": 0}),
}


def assert_encodes(value: Any) -> None:
    """Every string in ``value`` (nested in dicts, lists, tuples) encodes as UTF-8."""
    if isinstance(value, str):
        value.encode("utf-8")
    elif isinstance(value, dict):
        for key, item in value.items():
            assert_encodes(key)
            assert_encodes(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            assert_encodes(item)


def assert_in_space(env: gym.Env, obs: str, info: dict[str, Any]) -> None:
    """What ``check_env`` asks of an observation, and that all text encodes."""
    assert env.observation_space.contains(obs), repr(obs[:200])
    assert all(c in TEXT_CHARSET for c in obs[:10_000])
    assert_encodes(obs)
    assert_encodes(info)


# -- the rule ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("payload", "shown"), PAYLOADS[:5])
def test_clean_text_shows_each_hostile_text_as_the_rule_says(payload, shown):
    assert clean_text(payload) == shown
    assert clean_text(shown) == shown  # idempotent
    assert text_space().contains(shown)


def test_every_code_point_is_admitted_or_cleaned_into_the_set():
    space = text_space(8)
    for code in itertools.chain(range(0x200), range(0xD7F0, 0xE010), range(0x10FFF0, 0x110000)):
        char = chr(code)
        admitted = char in TEXT_CHARSET
        assert space.contains(char) == admitted
        assert admitted == (code in (9, 10) or 0x20 <= code <= 0x7E or 0xA0 <= code < 0xD800
                            or code >= 0xE000)
        assert space.contains(clean_text(char))
        if admitted:
            assert clean_text(char) == char


def test_coerce_action_bounds_and_cleans_whatever_it_gets():
    # Not a str: outside the action space, the empty (invalid) action, never its text.
    assert coerce_action(b"up\xff\x00") == coerce_action(b"up") == coerce_action(7) == ""
    assert coerce_action(None) == ""
    assert coerce_action("up\x00") == "up\\x00"
    assert coerce_action("\x00" * 2_000_000) == ("\\x00" * MAX_ACTION_CHARS)[:MAX_ACTION_CHARS]
    assert coerce_action(f"\ud800{LEGIT}") == f"\ufffd{LEGIT}"


def test_the_text_space_is_a_gymnasium_text_space_over_all_of_unicode():
    space = text_space(50)
    assert isinstance(space, Text) and space == TextSpace(50) and space != TextSpace(49)
    assert space.contains(LEGIT) and not space.contains("a\x00") and not space.contains("\ud800")
    assert not space.contains("x" * 51) and not space.contains(b"bytes")
    assert len(TEXT_CHARSET) == 0x110000 - 2048 - 65 + 2  # all but surrogates and controls
    space.seed(0)
    samples = [space.sample() for _ in range(20)]
    assert all(space.contains(s) for s in samples)
    assert any(ord(c) > 0xFFFF for s in samples for c in s)  # sampling reaches the astral planes
    assert len(space.sample(mask=(7, None))) == 7
    flat = flatten(space, LEGIT)  # Gymnasium's flattening indexes every character
    assert [TEXT_CHARSET.at([i])[0] for i in flat[: len(LEGIT)]] == [ord(c) for c in LEGIT]


# -- every env, bare and wrapped -------------------------------------------------------------
@pytest.fixture(scope="module", params=list(ENVS))
def made(request, module_tmp):
    name = request.param
    env_id, kwargs, options = ENVS[name]
    if name == "alfworld":
        kwargs = {**kwargs, "cache_dir": str(module_tmp("alfworld"))}
    env = gym.make(env_id, **kwargs)
    yield name, env, options
    env.close()


def _extra_payloads(name: str) -> list[tuple[str, str]]:
    """Payloads an env echoes in its own way: WebShop's search box, TIR Math's sandbox."""
    if name == "webshop":
        return [(f"search[{LEGIT} \ud800 \x00]", "")]
    if name == "tir":
        program = "print('a\\x00b\\x07'); import sys; sys.stdout.buffer.write(b'\\xff\\xfe\\x1b')"
        return [(f"```python\n{program}\n```", "a\\x00b\\x07")]
    return []


def test_hostile_actions_leave_the_bare_env_inside_its_spaces(made):
    name, env, options = made
    obs, info = env.reset(seed=0, options=options)
    assert_in_space(env, obs, info)
    for payload, shown in PAYLOADS + _extra_payloads(name):
        obs, _, terminated, truncated, info = env.step(payload)
        assert_in_space(env, obs, info)
        if name == "tir" and len(payload) < 1000:  # TIR Math echoes the model's turn
            assert shown in obs
        if terminated or truncated:
            obs, info = env.reset(seed=0, options=options)
    assert env.render() is None or env.observation_space.contains(env.render())


def test_hostile_responses_leave_prompts_inside_the_wrapper_space(made):
    name, env, options = made
    # Sokoban's history names the move (Up, ..., Still), as the study's: no echo to look for.
    echoes = name != "sokoban"
    wrapped = PromptWrapper(env, history_length=2, format_check="study" if echoes else "strict")
    prompt, info = wrapped.reset(seed=0, options=options)
    assert_in_space(wrapped, prompt, info)
    for payload, shown in PAYLOADS + _extra_payloads(name):
        response = f"<think>{payload}</think><action>{payload}</action>"
        prompt, _, terminated, truncated, info = wrapped.step(response)
        assert_in_space(wrapped, prompt, info)
        if len(payload) < 1000 and shown:
            if name != "tir":  # the env got the clean action, and the history shows it
                assert info["parsed_action"] == shown
            assert shown in prompt or not echoes
        if terminated or truncated:
            prompt, info = wrapped.reset(seed=0, options=options)
    # One more step: the hostile actions of the history are still clean in the next prompt.
    prompt, *_, info = wrapped.step("<think>t</think><action>up</action>")
    assert_in_space(wrapped, prompt, info)


def test_a_prompt_longer_than_its_space_loses_its_middle_not_its_instructions():
    def prompt_after(action: str) -> tuple[PromptWrapper, str, dict[str, Any]]:
        # The bandit's history shows the actions (Sokoban's names the moves, as the study's).
        wrapped = PromptWrapper(gym.make("ARLArena/Bandit-v0", rounds=20), history_length=5)
        wrapped.reset(seed=0)
        for k in range(5):
            prompt, *_, info = wrapped.step(f"<think>t</think><action>{action}{k}</action>")
        return wrapped, prompt, info

    _, short, _ = prompt_after("u")
    wrapped, prompt, info = prompt_after("u" * 30_000)  # 150,000 characters of history
    assert_in_space(wrapped, prompt, info)
    assert len(prompt) > wrapped.observation_space.max_length - 100 and "characters cut" in prompt
    assert prompt.startswith(short[:100]) and prompt.endswith(short[-150:])


# -- the sandbox's binary output --------------------------------------------------------------
def test_binary_program_output_and_answers_reach_the_model_escaped():
    env = gym.make("ARLArena/TIRMath-v0", **TIR_KWARGS)
    env.reset(seed=0)
    program = ("import sys\nsys.stdout.write('nul\\x00 bell\\x07 esc\\x1b[31m del\\x7f c1\\x85 "
               f"{LEGIT}\\n')\nsys.stdout.buffer.write(b'bytes \\xff\\xfe\\x00\\n')")
    obs, *_, info = env.step(f"```python\n{program}\n```")
    assert_in_space(env, obs, info)
    assert f"nul\\x00 bell\\x07 esc\\x1b[31m del\\x7f c1\\x85 {LEGIT}" in obs
    assert "bytes \ufffd\ufffd\\x00" in obs
    obs, _, terminated, _, info = env.step("```python\nfinal_answer('4\\x00\\ud800')\n```")
    assert terminated and info["prediction"].startswith("4\\x00")  # printed as \boxed{...}
    assert_in_space(env, obs, info)


# -- the results JSONL ------------------------------------------------------------------------
def test_results_always_write_and_read_back(tmp_path):
    path = tmp_path / "r.jsonl"
    record = {"type": "episode", "episode_id": "e0",
              "response": "a\ud800 \ud83d\ude00 \x00 " + LEGIT, "nested": [{"\udc00key": "\udfff"}]}
    with ResultsWriter(path) as writer:
        writer.write(record)
    raw = path.read_bytes().decode("utf-8")  # strict: the file is valid UTF-8
    (back,) = read_records(path)
    assert back["response"] == f"a\ufffd {EMOJI} \x00 {LEGIT}"  # NUL kept exactly, via JSON
    assert back["nested"] == [{"\ufffdkey": "\ufffd"}]
    assert "\\u0000" in raw and EMOJI in raw
    assert prepare_resume(path) == {"e0"} and list(read_records(path)) == [back]


# -- arlarena eval end to end -----------------------------------------------------------------
HOSTILE_REPLIES = [
    "<think>\ud800</think><action>up\ud800</action>",
    "<think>\ud83d\ude00</think><action>down</action>",
    "<think>ok</think><action>left\x00</action>",
    f"<think>{LEGIT}</think><action>right {LEGIT}</action>",
    "<think>" + "x" * 1_000_000 + "</think><action>up</action>",
    "```python\nprint('a\\x00b')\n```\n<action>\x00\ud800</action>",
]


def _cycling(replies: list[str]):
    """A server responder that answers request k with ``replies[k % len(replies)]``."""
    counter, lock = itertools.count(), threading.Lock()

    def respond(messages):
        with lock:
            return replies[next(counter) % len(replies)]

    return respond


def _assert_results_clean(path: Path, episodes: int) -> list[dict[str, Any]]:
    lines = path.read_bytes().decode("utf-8").splitlines()  # strict UTF-8
    records = [json.loads(line) for line in lines]
    finished = [r for r in records if r["type"] == "episode"]
    assert len(finished) == episodes and not any(r["error"] for r in finished)
    turns = [r for r in records if r["type"] == "turn"]
    for turn in turns:
        assert text_space().contains(turn["prompt"])
    return turns


# TIR Math ends an episode at a reply without code (the study's rule): 6 one-turn episodes
# there meet every reply that 2 bandit episodes meet. The bandit's history shows the actions
# (Sokoban's names the moves, as the study's).
@pytest.mark.parametrize(("env", "kwargs", "cache", "episodes"), [
    ("ARLArena/Bandit-v0", {"rounds": 6}, True, 2), ("math", TIR_KWARGS, False, 6)])
def test_arlarena_eval_survives_hostile_api_replies(tmp_path, env, kwargs, cache, episodes):
    with ChatServer(_cycling(HOSTILE_REPLIES), model="m") as server:
        status = main(["eval", "--env", env, "--agent", "openai", "--model", "m",
                       "--base-url", server.base_url, "--episodes", str(episodes),
                       "--batch-size", "2",
                       "--env-kwargs", json.dumps({**kwargs, "max_episode_steps": 6}),
                       "--api-seed", "1", "--out", str(tmp_path / "out"), "--no-progress",
                       *(["--cache-dir", str(tmp_path / "cache")] if cache else [])])
    assert status == 0
    (path,) = (tmp_path / "out").glob("*.jsonl")
    turns = _assert_results_clean(path, episodes=episodes)
    responses = "".join(t["response"] for t in turns)
    assert "up\ufffd" in responses and f"<think>{EMOJI}</think>" in responses
    assert "left\x00" in responses  # the response is recorded as the model sent it
    assert LEGIT in responses
    prompts = "".join(t["prompt"] for t in turns)
    assert "\x00" not in prompts and "\\x00" in prompts  # the echo, escaped
    if env == "ARLArena/Bandit-v0":
        assert f"right {LEGIT}" in prompts  # legitimate text survives into the history


def test_debate_sends_hostile_replies_back_without_failing(tmp_path):
    replies = ["<think>\ud800</think><action>arm a</action>", f"<think>{LEGIT}</think>"
               "<action>\ud83d\ude00</action>"]
    with ChatServer(models={"m1": _cycling(replies), "m2": _cycling(replies[::-1])}) as server:
        debaters = f"m1@{server.base_url},m2@{server.base_url}"
        status = main(["eval", "--env", "ARLArena/Bandit-v0", "--agent", "debate",
                       "--debaters", debaters, "--rounds", "2", "--episodes", "2",
                       "--out", str(tmp_path), "--no-progress"])
        sent = json.dumps(server.requests, ensure_ascii=False)
    assert status == 0
    (path,) = tmp_path.glob("*.jsonl")
    _assert_results_clean(path, episodes=2)
    assert "\ufffd" in sent and EMOJI in sent  # the follow-up rounds carried the repaired text


# -- the OpenRLHF agent -----------------------------------------------------------------------
def test_openrlhf_agent_turns_hostile_text_into_clean_feedback_and_anchors():
    pytest.importorskip("openrlhf.utils.agent")
    from arlarena_baselines.openrlhf.agent import ArenaAgentInstance
    from arlarena_baselines.openrlhf.chat_turns import ChatTurns
    from arlarena_baselines.openrlhf.settings import AgentSettings, Task
    from arlarena_baselines.trainer.models import smollm2_tokenizer

    tokenizer = smollm2_tokenizer()
    settings = AgentSettings.from_environ({"ARLARENA_ENV": "math", "ARLARENA_METHOD": "GiGPO",
                                           "ARLARENA_ENV_KWARGS": json.dumps(TIR_KWARGS)})
    agent = ArenaAgentInstance(ChatTurns(tokenizer), settings)

    async def play() -> list[dict[str, Any]]:
        await agent.reset({"label": Task(0).label()})
        # Each turn has a code block, so the episode goes on (TIR Math's rule, as the study's).
        return [await agent.step({"action_text": text}) for text in
                ("turn \ud800 \x00 " + LEGIT + "\n```python\nprint(1)\n```",
                 "```python\nprint('\\x00')\n```", "again\n```python\nprint(2)\n```")]

    outs = asyncio.run(play())
    for out in outs:
        feedback = out["environment_feedback"]
        assert_encodes(feedback)
        assert tokenizer.encode(feedback, add_special_tokens=False)
    assert len(outs[-1]["extra_logs"]["arlarena/turn_anchors"]) == 3
    assert LEGIT in outs[0]["environment_feedback"]
