"""``ARLArena/TIRMath-v0``: the turn loop, rewards, limits, the prompt and hostile actions."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import arlarena_envs  # noqa: F401  (registers the ids)
from arlarena_envs.base import MAX_OBS_CHARS
from arlarena_envs.tir_math.env import TIRMathEnv
from arlarena_envs.tir_math.sandbox import MAX_ANSWER_CHARS
from arlarena_envs.tir_math.turns import cut_point, first_code, prose
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


def test_registered_with_the_studys_turn_limit() -> None:
    env = gym.make("ARLArena/TIRMath-v0", dataset="arithmetic", sandbox_limits=FAST)
    assert env.spec.max_episode_steps == 5 and env.unwrapped.max_turns == 5
    env.reset(seed=0)
    *_, terminated, truncated, info = env.step("thinking aloud, no code yet")
    assert terminated and not truncated and info["action_is_valid"] is False


def test_reset_picks_tasks_reproducibly(env: TIRMathEnv) -> None:
    obs, info = env.reset(seed=11)
    assert obs == info["task"]  # a bare env shows the question
    assert info["anchor"] == info["response_prefix"] == "" and info["admissible_actions"] == []
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


def result(output: str) -> str:
    return f"\nCode execution result: {output}\n"


def test_a_step_is_cut_after_its_first_block_and_continued(env: TIRMathEnv) -> None:
    question, _ = env.reset(seed=0)
    first = code("print(6 * 7)")
    turn = first + "So far so good.\n```python\nprint('never runs')\n```\n"
    obs, reward, terminated, truncated, info = env.step(turn)
    assert obs == question + first.rstrip("\n") + result("42\n")
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["response_cut"] == len(first) - 1 and info["continuation"] == result("42\n")
    assert question + info["anchor"] == question + info["response_prefix"] == obs
    assert info["exec_status"] == "ok"
    obs2, *_, info = env.step("Next:\n```py\nprint(2 ** 10)\n```")
    assert obs2 == obs + "Next:\n```py\nprint(2 ** 10)\n```" + result("1024\n")


def test_tool_output_rules(env: TIRMathEnv) -> None:
    cases = {
        "print(1 / 0)": "ZeroDivisionError: division by zero",
        "import sys\nprint('hidden')\nprint('warn', file=sys.stderr)": "warn",
        "x = 1": "",
        "import sys\nsys.exit(3)": "interpreter timeout",
        "import time\nprint('partial', flush=True)\ntime.sleep(60)": "Timeout",
    }
    for source, shown in cases.items():
        env.reset(seed=0)
        obs, *_ = env.step(code(source))
        assert obs.endswith(f"```{result(shown)}"), (source, obs)
    env.reset(seed=0)
    obs, *_ = env.step(code("print('a' * 300 + 'b' * 300, end='')"))
    assert obs.endswith(result("a" * 256 + "\n..._This content has been truncated to stay below "
                               "512 characters_...\n" + "b" * 256))


def test_an_episode_ends_on_a_printed_box(env: TIRMathEnv) -> None:
    _, info = env.reset(seed=2)
    reference = info["reference"]
    obs, reward, terminated, _, info = env.step(code(f"final_answer({reference!r})"))
    assert obs.endswith(result(f"\\boxed{{{reference}}}\n"))
    assert (reward, terminated, info["won"], info["prediction"]) == (1.0, True, True, reference)
    env.reset(seed=2)
    *_, terminated, _, _ = env.step(code("print('\\\\boxed' + '{1}')"))
    assert terminated


def test_an_episode_ends_on_a_box_or_a_step_without_code(env: TIRMathEnv) -> None:
    _, info = env.reset(seed=5)
    obs, reward, terminated, _, info = env.step(f"So \\boxed{{{info['reference']}}}.")
    assert (reward, terminated, info["continuation"]) == (1.0, True, "")
    _, info = env.reset(seed=5)
    boxed_code = code("print(1)", f"It is \\boxed{{{info['reference']}}}, checking:")
    obs, reward, terminated, _, info = env.step(boxed_code)
    assert terminated and reward == 1.0 and obs.endswith(result("1\n"))
    _, info = env.reset(seed=4)
    obs, reward, terminated, _, info = env.step(f"I think it is {info['reference']}")
    assert terminated and obs.endswith("\n") and info["action_is_valid"] is False
    assert reward == 1.0, "the study's grader falls back to the last number"


def test_the_strict_grader_wants_a_box_outside_code() -> None:
    strict = TIRMathEnv(dataset="arithmetic", grader="strict", sandbox_limits=FAST)
    _, info = strict.reset(seed=4)
    *_, reward, terminated, _, info = strict.step(f"I think it is {info['reference']}")
    assert terminated and reward == 0.0 and info["grader"] == "strict"
    _, info = strict.reset(seed=6)
    *_, reward, _, _, info = strict.step(code(f"final_answer({info['reference']!r})"))
    assert reward == 1.0


def test_turn_limit_truncates_and_still_grades() -> None:
    short = TIRMathEnv(dataset="arithmetic", max_turns=3, sandbox_limits=FAST)
    _, info = short.reset(seed=4)
    steps = [short.step(code(f"print({info['reference']!r})")) for _ in range(3)]
    assert [s[2:4] for s in steps] == [(False, False), (False, False), (False, True)]
    assert steps[1][4]["continuation"].endswith("\n\n\n"), "the notice before the last turn"
    assert steps[2][1] == 1.0, "the last printed number is the study's answer"


def test_a_warning_hides_the_printed_answer_as_in_the_study(env: TIRMathEnv) -> None:
    _, info = env.reset(seed=2)
    source = f"import sys\nprint('careful', file=sys.stderr)\nfinal_answer({info['reference']!r})"
    obs, _, terminated, _, _ = env.step(code(source))
    assert obs.endswith(result("careful")) and terminated
    full = TIRMathEnv(dataset="arithmetic", tool_output="full", sandbox_limits=FAST)
    full.reset(seed=2)
    obs, reward, terminated, _, _ = full.step(code(source))
    assert obs.endswith(result(f"\\boxed{{{info['reference']}}}\ncareful")) and reward == 1.0


def test_context_budget_truncates() -> None:
    small = TIRMathEnv(dataset="arithmetic", max_context_chars=300, sandbox_limits=FAST)
    question, _ = small.reset(seed=0)
    obs, _, terminated, truncated, info = small.step(code("print(1)", "x" * 400))
    assert (terminated, truncated) == (False, True) and len(info["response_prefix"]) == 300
    assert obs == question + info["response_prefix"]
    after = small.step("\\boxed{1}")  # past the end: the last step's flags again, as every env
    assert after[:4] == (obs, 0.0, False, True) and after[4]["action_is_valid"] is False


def test_tool_output_is_cut_to_tokens() -> None:
    from arlarena_baselines.trainer.models import smollm2_tokenizer

    tokenizer = smollm2_tokenizer()
    env = TIRMathEnv(dataset="arithmetic", tokenizer=tokenizer, max_output_tokens=20,
                     sandbox_limits=FAST)
    env.reset(seed=0)
    *_, info = env.step(code("print(' '.join(str(i) for i in range(100)))"))
    ids = tokenizer.encode(info["continuation"], add_special_tokens=False)
    assert len(ids) <= 21 and info["continuation"].startswith(result("0 1 2")[:-1])


def test_hostile_actions_never_raise(env: TIRMathEnv) -> None:
    env.reset(seed=0)
    for action in (b"\xff\xfe\x00junk\x80", "", None, 12345, "\x00" * 10, "```python\n",
                   "\\boxed{" * 1000, "z" * 1_000_000, "```python\nimport os; os._exit(9)\n```"):
        env.reset(seed=0)
        obs, reward, *_, info = env.step(action)
        assert isinstance(obs, str) and len(obs) <= MAX_OBS_CHARS
        assert reward in (0.0, 1.0) and isinstance(info["action_is_valid"], bool)


@pytest.mark.parametrize("opening", ["x```py\n", "a```\n", " ```python\n", "`` ```\n"])
def test_a_megabyte_of_unclosed_openings_steps_in_under_a_second(opening: str) -> None:
    """Openings with no closing fence cost a linear search (the lazy pattern took 5.9 s at
    40 KB and an hour at 1 MB): 100 KB and then 1 MB of them step in under a second each. A
    first step starts the grader's helper process, which the timing leaves out."""
    env = TIRMathEnv(dataset="arithmetic", sandbox_limits=FAST)
    env.reset(seed=0)
    env.step("warming up: \\boxed{0}")
    for size in (100_000, 1_000_000):
        env.reset(seed=0)
        action = (opening * (size // len(opening) + 1))[:size]
        start = time.perf_counter()
        *_, terminated, _, info = env.step(action)
        assert time.perf_counter() - start < 1.0, size
        assert terminated and info["exec_status"] is None  # no complete block: nothing ran


STUDY_BLOCK = re.compile(r"```(?:py|python)?\n(.*?)\n```", re.S)  # the study's pattern
ANY_FENCE = re.compile(r"```[^\n`]*\n.*?```", re.S)
PIECES = ["```", "```py", "```python", "```text", "````", "\n```", "\n", "`", "x", "py",
          "python", " ", "print(1)\n"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14).map("".join))
def test_the_linear_search_finds_what_the_studys_pattern_did(text: str) -> None:
    block = STUDY_BLOCK.search(text)
    assert cut_point(text) == (block.end() if block else len(text))
    assert first_code(text) == (block.group(1).strip() if block else None)
    assert prose(text) == ANY_FENCE.sub(" ", text)


def test_answers_are_capped_however_they_arrive(env: TIRMathEnv) -> None:
    for turn in (f"So \\boxed{{{'7' * 500_000}}}", code("final_answer('7' * 50_000)"),
                 f"{'7' * 500_000} is my guess"):
        env.reset(seed=0)
        *_, terminated, truncated, info = env.step(turn)
        assert terminated or truncated
        assert info["prediction"] and len(info["prediction"]) <= MAX_ANSWER_CHARS


# The study's prompt, written down from recipe/math_agent/config/math_agent_trainer.yaml
# (data.prompt, lines 17-33); the question follows it (utils/rl_dataset/rl_dataset.py, line 109).
STUDY_PROMPT = """\
Solve the following problem step by step. You now have the ability to selectively write \
executable Python code to enhance your reasoning process. The Python code will be executed by \
an external sandbox, and the output (after "Code execution result: ") is returned to aid your \
reasoning and help you arrive at the final answer. The Python code should be complete scripts,\
 including necessary imports.

Code Format:
Each code snippet is wrapped between ```. You need to use `print()` to output intermediate \
results.

Answer Format:
You can use the `final_answer()` function in the code to return your final answer. For \
example, to answer the User Question: What is the result of the 5 + 3 + 1294.678?, you can \
write:
```py
answer = 5 + 3 + 1294.678
final_answer(answer)
```

You can also use \\boxed to return your answer. The last part of your response should be:
\\boxed{'The final answer goes here.'}

User Question:
"""


def test_the_prompt_is_the_studys_then_the_response_so_far(env: TIRMathEnv) -> None:
    wrapped = PromptWrapper(env)
    prompt, info = wrapped.reset(seed=4)
    template = render_prompt("tir_math", task=info["task"], observation=info["task"])
    assert prompt == template == STUDY_PROMPT + info["task"]
    prompt2, *_, info = wrapped.step(code("print(2 ** 5)"))
    assert prompt2 == template + info["response_prefix"]
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
    """The strict grader accepts every boxed reference; the study's parser drops unit words
    (``m``, ``a``, ``c``) from a few of CHAMP's references and so rejects them."""
    verdicts = {}
    for grader in ("strict", "study"):
        champ = TIRMathEnv(dataset="champ", grader=grader, sandbox_limits=FAST)
        wins = []
        for seed in range(0, 200, 5):
            champ.reset(seed=seed)
            wins.append(champ.step(champ.expert_action())[1])
        verdicts[grader] = sum(wins) / len(wins)
        assert champ.expert_action() is None
    assert verdicts["strict"] == 1.0 and 0.9 <= verdicts["study"] < 1.0


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        TIRMathEnv(max_context_chars=MAX_OBS_CHARS + 1)
    with pytest.raises(ValueError):
        TIRMathEnv(dataset="not-a-set")
    fresh = TIRMathEnv(dataset="arithmetic")
    with pytest.raises(RuntimeError, match="call reset") as raised:
        _ = fresh.task
    assert type(raised.value) is RuntimeError  # not a subclass, e.g. SandboxUnavailable
