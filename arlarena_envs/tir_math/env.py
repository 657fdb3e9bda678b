"""``ARLArena/TIRMath-v0``: tool-integrated maths, the model's Python run in a sandbox."""

from __future__ import annotations

from typing import Any

from arlarena_envs.base import MAX_OBS_CHARS, TextEnv, coerce_action
from arlarena_envs.tir_math.answer import extract_boxed, is_equivalent
from arlarena_envs.tir_math.data import MathTask, TaskSet, load_taskset
from arlarena_envs.tir_math.sandbox import MAX_ANSWER_CHARS, Sandbox, SandboxLimits
from arlarena_envs.tir_math.turns import CodeBlock, find_code_blocks, prose, render_turn

__all__ = ["TIRMathEnv"]

TURN_SEPARATOR = "\n\n"
"""What precedes each turn in the transcript (the observation)."""


class TIRMathEnv(TextEnv):
    """Solve a maths problem, optionally running Python in a sandbox, and box the answer.

    One step is one model turn (the raw response text). The turn's fenced Python blocks run in
    order, each in a fresh sandbox, and their output is spliced in after each block as
    ``Code execution result: <output>``. The episode ends when a turn gives a final answer --
    the last ``\\boxed{...}`` outside code blocks (then the turn's code is not run), or a
    ``final_answer(x)`` call in its code (later blocks do not run) -- with reward 1 if the answer
    is equivalent to the reference (``math-verify``), else 0. At most ``max_tool_calls`` blocks
    run per episode; later ones get a notice instead of output. A turn that would take the
    transcript past ``max_context_chars`` ends the episode as truncated, without running code.

    The observation is the transcript after the question: empty after ``reset``, then every turn
    so far with its results, each turn preceded by a blank line. The ``tir_math`` template puts
    it right after the question, so the prompt on turn k is the question followed by the
    conversation so far. ``info["task"]`` is the question, ``info["reference"]`` the reference
    answer (for evaluation; it never appears in the observation), ``info["dataset"]`` the
    set's name. ``reset(seed=s)`` picks task ``s % len(set)``; ``options`` may pick
    ``dataset`` (or ``split``: a built-in set or a file path), ``level`` and ``index``.

    Example:
        >>> import gymnasium as gym, arlarena_envs
        >>> env = gym.make("ARLArena/TIRMath-v0", dataset="arithmetic")
        >>> obs, info = env.reset(seed=0, options={"index": 1})
        >>> obs, info["dataset"], info["admissible_actions"]
        ('', 'arithmetic', [])
        >>> turn = "```python\\nprint(6 * 7)\\n```"
        >>> obs, reward, terminated, truncated, info = env.step(turn)
        >>> obs.endswith("Code execution result: 42\\n"), reward, terminated
        (True, 0.0, False)
    """

    prompt_template = "tir_math"
    strict_format = False
    lowercase_actions = False

    def __init__(
        self,
        dataset: str = "train",
        level: int | None = None,
        max_tool_calls: int = 4,
        max_context_chars: int = 32_000,
        max_output_chars: int = 2_000,
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
            max_tool_calls: code executions allowed per episode.
            max_context_chars: budget of the transcript (the observation), in characters.
            max_output_chars: each execution's output is cut to this many characters.
            sandbox_limits: :class:`SandboxLimits` (or its fields as a dict).
            unsafe_sandbox: run code without bubblewrap (see :class:`Sandbox`); ``None`` reads
                ``ARLARENA_UNSAFE_SANDBOX``.
            answer_timeout_s: time allowed to decide one answer's equivalence.
        """
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}")
        if not 0 < max_context_chars <= MAX_OBS_CHARS:
            raise ValueError(f"max_context_chars must be in (0, {MAX_OBS_CHARS}]")
        if max_tool_calls < 0 or max_output_chars < 1:
            raise ValueError("max_tool_calls must be >= 0 and max_output_chars >= 1")
        if isinstance(sandbox_limits, dict):
            sandbox_limits = SandboxLimits(**sandbox_limits)
        self.render_mode = render_mode
        self.dataset = dataset
        self.level = level
        self.max_tool_calls = int(max_tool_calls)
        self.max_context_chars = int(max_context_chars)
        self.max_output_chars = int(max_output_chars)
        self.answer_timeout_s = float(answer_timeout_s)
        self.sandbox = Sandbox(sandbox_limits, unsafe=unsafe_sandbox)
        self._tasks: TaskSet = load_taskset(dataset, level)
        self._tasks_key: tuple[str, int | None] = (dataset, level)
        self._task: MathTask | None = None
        self._transcript = ""
        self._tool_calls = 0
        self._done = False
        self._prediction: str | None = None
        self._won = False

    @property
    def task(self) -> MathTask:
        """The problem of the current episode (``reset`` must have been called)."""
        if self._task is None:
            raise RuntimeError("call reset() before using the environment")
        return self._task

    def _info(self, action_is_valid: bool | None = None, **extra: Any) -> dict[str, Any]:
        task = self.task
        return self.make_info(
            task=task.question,
            admissible_actions=[],
            won=self._won,
            anchor=self._transcript,
            action_is_valid=action_is_valid,
            dataset=task.dataset,
            task_type=task.task_type,
            level=task.level,
            task_index=task.index,
            reference=task.answer,
            prediction=self._prediction,
            tool_calls=self._tool_calls,
            context_chars=len(self._transcript),
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
        self._transcript, self._tool_calls, self._done = "", 0, False
        self._prediction, self._won = None, False
        return self._transcript, self._info()

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Run one model turn (see the class docs)."""
        text = coerce_action(action)
        if self._done:
            info = self._info(action_is_valid=False, exec_status=[])
            return self._transcript, 0.0, True, False, info
        blocks = [b for b in find_code_blocks(text) if b.runnable]
        answer = extract_boxed(prose(text))
        room = self.max_context_chars - len(self._transcript) - len(TURN_SEPARATOR)
        statuses: list[str] = []
        truncated = False
        if answer is None and len(text) > room:
            rendered, truncated = text, True
        elif answer is None:
            rendered, answer = self._run_blocks(text, blocks, statuses)
        else:
            rendered = text
        self._transcript = (self._transcript + TURN_SEPARATOR + rendered)[: self.max_context_chars]
        terminated = answer is not None
        full = len(self._transcript) >= self.max_context_chars
        truncated = not terminated and (truncated or full)
        if terminated:
            self._prediction = answer = answer[:MAX_ANSWER_CHARS]
            self._won = is_equivalent(answer, self.task.answer, timeout_s=self.answer_timeout_s)
        self._done = terminated or truncated
        valid = answer is not None or bool(blocks)
        reward = 1.0 if self._won else 0.0
        info = self._info(action_is_valid=valid, exec_status=statuses)
        return self._transcript, reward, terminated, truncated, info

    def _run_blocks(
        self, text: str, blocks: list[CodeBlock], statuses: list[str]
    ) -> tuple[str, str | None]:
        """Execute ``blocks`` in order; the turn with results spliced in, and any final answer."""
        outputs = []
        answer = None
        for block in blocks:
            if self._tool_calls >= self.max_tool_calls:
                notice = (f"not run: the limit of {self.max_tool_calls} code executions is "
                          "reached. Give your final answer in \\boxed{}.")
                outputs.append((block, notice))
                statuses.append("skipped")
                continue
            self._tool_calls += 1
            result = self.sandbox.run(block.code)
            outputs.append((block, result.output(self.max_output_chars)))
            statuses.append(result.status.value)
            if result.answer is not None:
                answer = result.answer
                break
        return render_turn(text, outputs), answer

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return f"{self.task.question}{self._transcript}"
        return None

    def expert_action(self) -> str | None:
        """The reference answer, boxed (privileged: it reads the reference)."""
        if self._task is None or self._done:
            return None
        return f"The answer is \\boxed{{{self.task.answer}}}."

