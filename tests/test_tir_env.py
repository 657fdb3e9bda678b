"""``ARLArena/TIRMath-v0``: the turn loop, rewards, limits, the prompt and hostile actions."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import arlarena_envs  # noqa: F401  (registers the ids)
from arlarena_envs.base import MAX_OBS_CHARS
from arlarena_envs.tir_math.env import TIRMathEnv
from arlarena_envs.tir_math.sandbox import MAX_ANSWER_CHARS
from wrappers import PromptWrapper
from wrappers.templates import render_prompt

FAST = {"wall_time_s": 3.0, "cpu_time_s": 2}


def code(source: str, before: str = "Let me compute.") -> str:
    return f"{before}\n```python\n{source}\n```\n"


@pytest.fixture
def env() -> TIRMathEnv:
    return TIRMathEnv(dataset="arithmetic", sandbox_limits=FAST)


def test_check_env_passes() -> None:
    check_env(TIRMathEnv(dataset="arithmetic", sandbox_limits=FAST), skip_render_check=True)


def test_registered_with_a_turn_limit() -> None:
    env = gym.make("ARLArena/TIRMath-v0", dataset="arithmetic", sandbox_limits=FAST)
    assert env.spec.max_episode_steps == 5
    env.reset(seed=0)
    for turn in range(5):
        *_, terminated, truncated, info = env.step("thinking aloud, no code yet")
        assert not terminated and truncated == (turn == 4)
        assert info["action_is_valid"] is False


def test_reset_picks_tasks_reproducibly(env: TIRMathEnv) -> None:
    obs, info = env.reset(seed=11)
    assert obs == "" and info["anchor"] == "" and info["admissible_actions"] == []
    other = TIRMathEnv(dataset="arithmetic", sandbox_limits=FAST)
    assert other.reset(seed=11)[1]["task"] == info["task"]
    assert env.reset(seed=12)[1]["task"] != info["task"]
    assert env.reset(options={"index": 11})[1]["task"] == info["task"]
    assert info["dataset"] == "arithmetic" and info["task_index"] == 11
    assert info["task"] == env.task.question and info["reference"] == env.task.answer
    champ = env.reset(seed=3, options={"split": "champ"})[1]
    assert champ["dataset"] == "champ" and champ["task_index"] == 3
    with pytest.raises(IndexError):
        env.reset(options={"dataset": "champ", "index": 10_000})


def test_code_runs_and_the_result_is_spliced_in(env: TIRMathEnv) -> None:
    env.reset(seed=0)
    turn = code("print(6 * 7)") + "Now I know."
    obs, reward, terminated, truncated, info = env.step(turn)
    assert obs == "\n\n" + code("print(6 * 7)") + "Code execution result: 42\n\nNow I know."
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["anchor"] == obs and info["tool_calls"] == 1 and info["exec_status"] == ["ok"]
    obs2, *_ = env.step(code("print(1/0)"))
    assert obs2.startswith(obs) and "ZeroDivisionError" in obs2
    assert "Code execution result: Traceback" in obs2


def test_boxed_answer_ends_the_episode(env: TIRMathEnv) -> None:
    _, info = env.reset(seed=5)
    _, reward, terminated, truncated, info = env.step(f"So \\boxed{{{info['reference']}}}.")
    assert (reward, terminated, truncated, info["won"]) == (1.0, True, False, True)
    assert info["prediction"] == info["reference"]
    _, info = env.reset(seed=6)
    *_, reward, terminated, _, info = env.step("\\boxed{definitely wrong}")
    assert (reward, terminated, info["won"]) == (0.0, True, False)


def test_a_boxed_answer_in_prose_wins_over_code(env: TIRMathEnv) -> None:
    _, info = env.reset(seed=1)
    turn = code("final_answer(-123456789)") + f"\\boxed{{{info['reference']}}}"
    *_, reward, terminated, _, info = env.step(turn)
    assert reward == 1.0 and terminated and info["tool_calls"] == 0
    env.reset(seed=1)
    boxed_in_code = code("print('\\\\boxed{1}')")
    *_, terminated, _, info = env.step(boxed_in_code)
    assert not terminated and info["tool_calls"] == 1


def test_final_answer_in_code_ends_the_episode(env: TIRMathEnv) -> None:
    _, info = env.reset(seed=2)
    reference = info["reference"]
    turn = code(f"final_answer({reference!r})") + code("print('never runs')")
    obs, reward, terminated, _, info = env.step(turn)
    assert reward == 1.0 and terminated and info["prediction"] == reference
    assert info["tool_calls"] == 1 and obs.count("Code execution result") == 1


def test_tool_call_limit(env: TIRMathEnv) -> None:
    limited = TIRMathEnv(dataset="arithmetic", max_tool_calls=2, sandbox_limits=FAST)
    limited.reset(seed=0)
    turn = "".join(code(f"print({i})", f"step {i}") for i in range(3))
    obs, _, terminated, _, info = limited.step(turn)
    assert info["exec_status"] == ["ok", "ok", "skipped"] and info["tool_calls"] == 2
    assert "limit of 2 code executions" in obs and not terminated
    assert "Code execution result: 0" in obs and "Code execution result: 1" in obs


def test_non_python_blocks_do_not_run(env: TIRMathEnv) -> None:
    env.reset(seed=0)
    turn = "```output\n42\n```\n```bash\nrm -rf /\n```\n```python\nprint('ran')\n```"
    obs, *_, info = env.step(turn)
    assert info["exec_status"] == ["ok"] and obs.count("Code execution result") == 1


def test_context_budget_truncates_without_running_code() -> None:
    small = TIRMathEnv(dataset="arithmetic", max_context_chars=300, sandbox_limits=FAST)
    small.reset(seed=0)
    obs, reward, terminated, truncated, info = small.step(code("print(1)", "x" * 400))
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info["tool_calls"] == 0 and len(obs) <= 300
    after = small.step("\\boxed{1}")
    assert after[:4] == (obs, 0.0, True, False) and after[4]["action_is_valid"] is False


def test_long_outputs_are_cut_for_the_model(env: TIRMathEnv) -> None:
    env.reset(seed=0)
    obs, *_ = env.step(code("print('y' * 50_000)"))
    assert len(obs) < env.max_output_chars + 200 and "characters cut" in obs


def test_hostile_actions_never_raise(env: TIRMathEnv) -> None:
    env.reset(seed=0)
    for action in (b"\xff\xfe\x00junk\x80", "", None, 12345, "\x00" * 10, "```python\n",
                   "\\boxed{" * 1000, "z" * 1_000_000, "```python\nimport os; os._exit(9)\n```"):
        env.reset(seed=0)
        obs, reward, *_, info = env.step(action)
        assert isinstance(obs, str) and len(obs) <= MAX_OBS_CHARS
        assert reward in (0.0, 1.0) and isinstance(info["action_is_valid"], bool)


def test_answers_are_capped_however_they_arrive(env: TIRMathEnv) -> None:
    forged = ("import os\nfor fd in [int(f) for f in os.listdir('/proc/self/fd') if int(f) > 2]:"
              "\n    try:\n        os.write(fd, b'answer ' + b'7' * 50_000 + b'\\n')"
              "\n    except OSError:\n        pass\nfinal_answer('7' * 50_000)")
    for turn in (f"So \\boxed{{{'7' * 500_000}}}", code(forged)):
        env.reset(seed=0)
        *_, terminated, _, info = env.step(turn)
        assert terminated and info["prediction"] == "7" * MAX_ANSWER_CHARS, (info, turn[:300])


def test_the_prompt_is_the_template_then_the_conversation(env: TIRMathEnv) -> None:
    wrapped = PromptWrapper(env)
    prompt, info = wrapped.reset(seed=4)
    template = render_prompt("tir_math", task=info["task"], observation="")
    assert prompt == template and prompt.endswith("User Question: " + info["task"])
    prompt2, *_ = wrapped.step(code("print(2 ** 5)"))
    assert prompt2 == template + "\n\n" + code("print(2 ** 5)") + "Code execution result: 32\n\n"
    prompt3, reward, terminated, _, info = wrapped.step(f"\\boxed{{{info['reference']}}}")
    assert prompt3.startswith(prompt2) and reward == 1.0 and terminated and info["format_ok"]


def test_dataset_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "aime_2025.jsonl"
    path.write_text(json.dumps({"question": "What is 7 * 6?", "answer": "42"}) + "\n")
    file_env = TIRMathEnv(dataset=str(path), sandbox_limits=FAST)
    _, info = file_env.reset(seed=99)
    assert info["dataset"] == "aime_2025" and info["task"] == "What is 7 * 6?"
    assert file_env.step("\\boxed{42}")[1] == 1.0


def test_expert_action_wins_on_champ() -> None:
    champ = TIRMathEnv(dataset="champ", sandbox_limits=FAST)
    wins = []
    for seed in range(0, 200, 5):
        champ.reset(seed=seed)
        wins.append(champ.step(champ.expert_action())[1])
    assert sum(wins) == len(wins)
    assert champ.expert_action() is None


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        TIRMathEnv(max_context_chars=MAX_OBS_CHARS + 1)
    with pytest.raises(ValueError):
        TIRMathEnv(dataset="not-a-set")
    with pytest.raises(RuntimeError):
        _ = TIRMathEnv(dataset="arithmetic").task
