"""TIR Math: tool-integrated maths; the model's Python runs in a bubblewrap sandbox.

Holds :class:`TIRMathEnv` (``ARLArena/TIRMath-v0``, the study's protocol: one response continued
after each code block), the sandbox (:class:`Sandbox`, :class:`SandboxLimits`,
:class:`ExecResult`, :class:`ExecStatus`), the graders (:func:`grade`) and answer checking
(:func:`extract_boxed`, :func:`is_equivalent`), and the task sets (:func:`load_taskset`).
"""

from arlarena_envs.tir_math.answer import extract_boxed, is_equivalent
from arlarena_envs.tir_math.data import MathTask, load_task_file, load_taskset
from arlarena_envs.tir_math.env import TIRMathEnv
from arlarena_envs.tir_math.grader import grade
from arlarena_envs.tir_math.sandbox import (
    ExecResult,
    ExecStatus,
    Sandbox,
    SandboxError,
    SandboxLimits,
    SandboxUnavailable,
)

__all__ = [
    "ExecResult",
    "ExecStatus",
    "MathTask",
    "Sandbox",
    "SandboxError",
    "SandboxLimits",
    "SandboxUnavailable",
    "TIRMathEnv",
    "extract_boxed",
    "grade",
    "is_equivalent",
    "load_task_file",
    "load_taskset",
]
