"""``ARLArena/TIRMath-v0``: tool-integrated maths, the model's Python run in a sandbox."""

from __future__ import annotations

from typing import Any

from arlarena_envs.base import MAX_OBS_CHARS, TextEnv, coerce_action
from arlarena_envs.tir_math.data import MathTask, TaskSet, load_taskset
from arlarena_envs.tir_math.grader import GRADERS, grade
from arlarena_envs.tir_math.sandbox import MAX_ANSWER_CHARS, ExecStatus, Sandbox, SandboxLimits
from arlarena_envs.tir_math.turns import (
    FINAL_ANSWER_DEF,
    RESULT_PREFIX,
    cut_point,
    first_code,
    tool_output,
)

__all__ = ["TOOL_OUTPUTS", "TIRMathEnv"]

TOOL_OUTPUTS = ("study", "full")
"""How an execution is shown: the study's rules, or ARLArena's stdout + stderr tail."""


class TIRMathEnv(TextEnv):
    """Solve a maths problem in one continuing response, running Python in a sandbox.

    The study's protocol (``recipe/math_agent/agent_utils.py``): the episode is one assistant
    response that the model writes in turns. One step is the model's new text. It is kept up
    to the end of its first code block (```` ``` ````, ```` ```py ```` or ```` ```python ````;
    what follows is dropped), that block runs in a fresh sandbox (after a ``final_answer(x)``
    that prints ``\\boxed{x}``), and ``\\nCode execution result: <output>\\n`` is appended, so
    that the next step continues the same text. The output is stderr's last line if there is
    any, else stdout, cut to 512 characters (head and tail) and, given ``tokenizer``, to 256
    tokens; ``Timeout`` on a timeout. The episode ends at a step with no code block, at one
    whose kept text holds ``\\boxed{``, at one whose printed output holds ``\\boxed{``, after
    ``max_turns`` steps (truncated), or when the transcript would pass ``max_context_chars``
    (truncated). The last step's reward is 1 if the whole transcript's answer equals the
    reference by ``grader`` (``study``: the study's; ``strict``: ARLArena's), else 0.

    The observation is the question followed by the transcript so far (the response with its
    tool outputs; empty after ``reset``), joined as the study's prompt joins them, so that a
    bare env shows its task. ``info["response_prefix"]`` and ``info["anchor"]`` are the
    transcript alone, for agents that continue the response; ``info["response_cut"]`` the
    number of characters of the step's text kept and ``info["continuation"]`` the text
    appended after them (a trainer builds the next prompt's tokens from those two).
    ``info["task"]`` is the question, ``info["reference"]`` the reference answer (for
    evaluation; it never appears in the observation), ``info["dataset"]`` the set's name.
    ``reset(seed=s)`` picks task ``s % len(set)``; ``options`` may pick ``dataset`` (or
    ``split``: a built-in set or a file path), ``level`` and ``index``.

    Pickling or deep-copying the env (:mod:`arlarena_envs.snapshots`) carries the transcript,
    not the sandbox: the copy starts its own sandbox (and, as root, warm server pool) on load.

    Example:
        >>> import gymnasium as gym, arlarena_envs
        >>> env = gym.make("ARLArena/TIRMath-v0", dataset="arithmetic")
        >>> obs, info = env.reset(seed=0, options={"index": 1})
        >>> obs == info["task"], info["dataset"], info["admissible_actions"]
        (True, 'arithmetic', [])
        >>> turn = "Let me compute.\\n```python\\nprint(6 * 7)\\n```\\nThis part is dropped."
        >>> obs, reward, terminated, truncated, info = env.step(turn)
        >>> obs == info["task"] + turn[:info["response_cut"]] + info["continuation"]
        True
        >>> terminated, info["response_cut"], info["continuation"]
        (False, 42, '\\nCode execution result: 42\\n\\n')
    """

    prompt_template = "tir_math"
    strict_format = False
    lowercase_actions = False

    def __init__(
        self,
        dataset: str = "train",
        level: int | None = None,
        max_turns: int = 5,
        max_context_chars: int = 32_000,
        max_output_chars: int = 512,
        max_output_tokens: int = 256,
        tokenizer: Any = None,
        grader: str = "study",
        tool_output: str = "study",
        sandbox_limits: SandboxLimits | dict[str, Any] | None = None,
        unsafe_sandbox: bool | None = None,
        answer_timeout_s: float = 5.0,
        render_mode: str | None = None,
    ) -> None:
        """
        Args:
            dataset: a built-in set (``train``, ``arithmetic``, ``gen_eval``, ``champ``) or a
                ``.jsonl``/``.json``/``.parquet`` file of problems and answers.
            level: restrict a generated set to one difficulty level.
            max_turns: steps per episode (the study's ``max_turns``).
            max_context_chars: budget of the transcript (the observation after the
                question), in characters.
            max_output_chars: each execution's output is cut to this many characters.
            max_output_tokens: ... and then to this many tokens of ``tokenizer``.
            tokenizer: the policy's tokenizer (an object with ``encode``/``decode``, or a name
                or path for ``transformers.AutoTokenizer``); ``None``: no token cut.
            grader: ``study`` (the study's grader) or ``strict`` (ARLArena's).
            tool_output: ``study`` (its rules) or ``full`` (ARLArena's: stdout, then stderr's
                tail and any limit hit, cut in the middle to ``max_output_chars``).
            sandbox_limits: :class:`SandboxLimits` (or its fields as a dict).
            unsafe_sandbox: run code without bubblewrap (see :class:`Sandbox`); ``None`` reads
                ``ARLARENA_UNSAFE_SANDBOX``.
            answer_timeout_s: time allowed to decide one answer's equivalence.
        """
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}")
        if not 0 < max_context_chars <= MAX_OBS_CHARS:
            raise ValueError(f"max_context_chars must be in (0, {MAX_OBS_CHARS}]")
        if max_turns < 1 or max_output_chars < 1 or max_output_tokens < 1:
            raise ValueError("max_turns, max_output_chars and max_output_tokens must be >= 1")
        if grader not in GRADERS or tool_output not in TOOL_OUTPUTS:
            raise ValueError(f"grader must be one of {GRADERS} and tool_output one of "
                             f"{TOOL_OUTPUTS}")
        if isinstance(sandbox_limits, dict):
            sandbox_limits = SandboxLimits(**sandbox_limits)
        self.render_mode = render_mode
        self.dataset = dataset
        self.level = level
        self.max_turns = int(max_turns)
        self.max_context_chars = int(max_context_chars)
        self.max_output_chars = int(max_output_chars)
        self.max_output_tokens = int(max_output_tokens)
        self.tokenizer = _load_tokenizer(tokenizer)
        self.grader = grader
        self.tool_output = tool_output
        self.answer_timeout_s = float(answer_timeout_s)
        self.sandbox = Sandbox(sandbox_limits, unsafe=unsafe_sandbox)
        self._tasks: TaskSet = load_taskset(dataset, level)
        self._tasks_key: tuple[str, int | None] = (dataset, level)
        self._task: MathTask | None = None
        self._transcript = ""
        self._turns = 0
        self._done = False
        self._prediction: str | None = None
        self._won = False

    @property
    def task(self) -> MathTask:
        """The problem of the current episode (``reset`` must have been called)."""
        if self._task is None:
            raise RuntimeError("call reset() before using the environment")
        return self._task

    def _observation(self) -> str:
        """The question, then the response so far (joined as the study's prompt joins them)."""
        return self.task.question + self._transcript

    def _info(self, **extra: Any) -> dict[str, Any]:
        task = self.task
        return self.make_info(
            task=task.question,
            admissible_actions=[],
            won=self._won,
            anchor=self._transcript,
            dataset=task.dataset,
            task_type=task.task_type,
            level=task.level,
            task_index=task.index,
            reference=task.answer,
            prediction=self._prediction,
            grader=self.grader,
            tool_output=self.tool_output,
            turns=self._turns,
            context_chars=len(self._transcript),
            response_prefix=self._transcript,
            **extra,
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start a problem: ``options["index"]``, else ``seed % len(set)``, else a random one."""
        super().reset(seed=seed, options=options)
        options = dict(options or {})
        key = (str(options.get("dataset") or options.get("split") or self.dataset),
               options.get("level", self.level))
        if key != self._tasks_key:
            self._tasks, self._tasks_key = load_taskset(*key), key
        if options.get("index") is not None:
            index = int(options["index"])
            if not 0 <= index < len(self._tasks):
                raise IndexError(f"index {index} out of range for {len(self._tasks)} tasks")
        elif seed is not None:
            index = int(seed) % len(self._tasks)
        else:
            index = int(self.np_random.integers(len(self._tasks)))
        self._task = self._tasks[index]
        self._transcript, self._turns, self._done = "", 0, False
        self._prediction, self._won = None, False
        return self._observation(), self._info(action_is_valid=None)

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Run one step of the response (see the class docs)."""
        text = coerce_action(action)
        kept = text[: cut_point(text)]
        code = first_code(kept)
        boxed = "\\boxed{" in kept
        status, printed, continuation = None, "", ""
        if code is not None:
            result = self.sandbox.run(FINAL_ANSWER_DEF + code)
            status, printed = result.status.value, result.stdout
            continuation = self._show(result)
        elif not boxed:
            continuation = "\n"  # the study's notice for a step with neither code nor answer
        self._turns += 1
        if self._turns == self.max_turns - 1 and continuation:
            continuation += "\n"  # the study's notice before the last turn
        room = self.max_context_chars - len(self._transcript)
        full = len(kept) + len(continuation) > room
        self._transcript = (self._transcript + kept + continuation)[: self.max_context_chars]
        terminated = code is None or boxed or "\\boxed{" in printed
        truncated = not terminated and (full or self._turns >= self.max_turns)
        self._done = terminated or truncated
        reward = 0.0
        if self._done:
            prediction, self._won = grade(
                self._transcript, self.task.answer, self.grader, timeout_s=self.answer_timeout_s)
            self._prediction = None if prediction is None else prediction[:MAX_ANSWER_CHARS]
            reward = 1.0 if self._won else 0.0
        info = self._info(action_is_valid=code is not None or boxed,
                          exec_status=status, response_cut=len(kept), continuation=continuation)
        return self._observation(), reward, terminated, truncated, info

    def scorer(self) -> dict[str, Any]:
        """The grader, and whether code runs without isolation (``ARLARENA_UNSAFE_SANDBOX``)."""
        return {"grader": self.grader, "unsafe_sandbox": self.sandbox.unsafe}

    def _show(self, result: Any) -> str:
        """The text appended after a block that ran (see ``tool_output``)."""
        if self.tool_output == "full":
            return f"\n{RESULT_PREFIX}{result.output(self.max_output_chars)}\n"
        text = tool_output(result.stdout, result.stderr, ok=result.ok,
                           timed_out=result.status is ExecStatus.TIMEOUT,
                           max_chars=self.max_output_chars)
        if self.tokenizer is not None:
            ids = self.tokenizer.encode(text, add_special_tokens=False)
            if len(ids) > self.max_output_tokens:
                text = self.tokenizer.decode(ids[: self.max_output_tokens])
        return text

    _PROGRESS = ("_transcript", "_turns", "_done", "_prediction", "_won")

    def _progress(self) -> dict[str, Any]:
        """The transcript and its bookkeeping: a copy resumes them instead of re-running code."""
        return {name: getattr(self, name) for name in self._PROGRESS}

    def _resume(self, progress: dict[str, Any]) -> None:
        for name in self._PROGRESS:
            setattr(self, name, progress[name])

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return f"{self.task.question}\n{self._transcript}"
        return None

    def expert_action(self) -> str | None:
        """The reference answer, boxed (privileged: it reads the reference)."""
        if self._task is None or self._done:
            return None
        return f"The answer is \\boxed{{{self.task.answer}}}."


def _load_tokenizer(tokenizer: Any) -> Any:
    """``tokenizer`` itself, or the ``transformers`` tokenizer it names (a name or a path)."""
    if tokenizer is None or hasattr(tokenizer, "encode"):
        return tokenizer
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tokenizer))
