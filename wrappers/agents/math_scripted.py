"""Scripted TIR Math agents: ``math-coder`` (writes Python for the problem) and ``math-random``.

``math-coder`` reads only the problem text (``info["task"]``) and the execution results in its
prompt -- never the reference answer. On its first turn it recognises the kind of generated
arithmetic problem (expressions, gcd/lcm, linear equations, primes in a range, polygon angles,
dice odds, complex numbers) and writes a complete script that prints the answer, followed by a
sentence that the env's cut after the first code block drops; once the prompt holds
``Code execution result: <x>``, it calls ``final_answer(x)`` in a second block, whose printed
``\\boxed{x}`` ends the episode: the shape of the study's TIR episodes. Problems it does not
recognise get an honest non-answer. ``math-random`` boxes a random integer at once.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Sequence

import numpy as np

from wrappers.agents.base import Agent, AgentRequest, register_agent

__all__ = ["MathCoderAgent", "MathRandomAgent", "solution_code"]

RESULT_PREFIX = "Code execution result: "

_NUM = r"-?\d+(?:\.\d+)?"
_ARITH_CHARS = re.compile(r"^[\d\s+\-*/().]+$")


def _fence(code: str) -> str:
    return f"```python\n{code.strip()}\n```"


def _expression(question: str) -> str | None:
    text = question.strip()
    text = re.split(r"\.\s*Give only", text)[0]
    text = text.split(":")[-1] if ":" in text else re.sub(r"^\s*Calculate\s+", "", text)
    text = text.strip().rstrip("=.").strip()
    has_operator = re.search(r"\d\s*[-+*/]\s*[-(\d]", text)
    return text if text and _ARITH_CHARS.match(text) and has_operator else None


def _arithmetic_code(question: str) -> str | None:
    expr = _expression(question)
    if expr is None:
        return None
    if "." in expr:
        return f"""
from decimal import Decimal, getcontext
import re
getcontext().prec = 60
expr = {expr!r}
value = eval(re.sub(r"\\d+(?:\\.\\d+)?", lambda m: f"Decimal('{{m.group(0)}}')", expr))
print(value)
"""
    return f"""
from fractions import Fraction
import re
expr = {expr!r}
value = eval(re.sub(r"\\d+", lambda m: f"Fraction({{m.group(0)}})", expr))
print(value)
"""


def _gcd_lcm_code(question: str) -> str | None:
    match = re.search(r"\((GCD|LCM)\) of these numbers: ([\d,\s]+)", question)
    if not match:
        return None
    numbers = [int(n) for n in re.findall(r"\d+", match.group(2))]
    return f"import math\nprint(math.{match.group(1).lower()}(*{numbers}))"


def _equation_code(question: str) -> str | None:
    match = re.search(r"(?:Solve for|value of) ([A-Za-z])\b.*?:\s*(.+=.+)$", question.strip())
    if not match:
        return None
    variable, equation = match.group(1), match.group(2)
    lhs, rhs = (side.strip() for side in equation.split("=", 1))
    return f"""
from sympy import Eq, solve, symbols, sympify
{variable} = symbols({variable!r})
solutions = solve(Eq(sympify({lhs!r}), sympify({rhs!r})), {variable})
print(solutions[0])
"""


def _primes_code(question: str) -> str | None:
    match = re.search(r"prime numbers there are between (\d+) and (\d+)", question)
    if not match:
        return None
    low, high = int(match.group(1)), int(match.group(2))
    return f"""
low, high = {low}, {high}
sieve = bytearray([1]) * (high + 1)
sieve[:2] = b"\\x00\\x00"
for p in range(2, int(high ** 0.5) + 1):
    if sieve[p]:
        sieve[p * p :: p] = bytearray(len(range(p * p, high + 1, p)))
print(sum(sieve[low:]))
"""


def _polygon_code(question: str) -> str | None:
    sides = re.search(r"(\d+) sides|convex (\d+)-gon", question)
    angles = re.findall(rf"({_NUM})°", question)
    if not sides or not angles:
        return None
    n = int(sides.group(1) or sides.group(2))
    values = [float(a) for a in angles]
    return f"""
n = {n}
known = {values}
missing = (n - 2) * 180 - sum(known)
print(round(missing) if abs(missing - round(missing)) < 1e-9 else round(missing, 2))
"""


def _dice_code(question: str) -> str | None:
    dice = re.findall(r"1d(\d+)", question.split("(")[0])
    target = re.search(r"rolling (\d+) or higher", question)
    if not dice or not target:
        return None
    return f"""
from fractions import Fraction
counts = {{0: 1}}
for sides in {[int(d) for d in dice]}:
    nxt = {{}}
    for total, ways in counts.items():
        for face in range(1, sides + 1):
            nxt[total + face] = nxt.get(total + face, 0) + ways
    counts = nxt
hits = sum(w for t, w in counts.items() if t >= {int(target.group(1))})
print(Fraction(hits, sum(counts.values())))
"""


def _complex_code(question: str) -> str | None:
    match = re.search(
        r"(Add|Subtract|Multiply|Divide) the complex numbers: \((.+?)\) \S \((.+?)\)", question
    )
    if not match:
        return None
    op = {"Add": "+", "Subtract": "-", "Multiply": "*", "Divide": "/"}[match.group(1)]
    left, right = (s.replace(" ", "").replace("i", "j") for s in match.group(2, 3))
    return f"""
z = complex({left!r}) {op} complex({right!r})
def part(x):
    return int(round(x)) if abs(x - round(x)) < 1e-9 else round(x, 6)
sign = "-" if z.imag < 0 else "+"
print(f"{{part(z.real)}} {{sign}} {{part(abs(z.imag))}}i")
"""


_SOLVERS: tuple[Callable[[str], str | None], ...] = (
    _complex_code, _gcd_lcm_code, _primes_code, _dice_code, _polygon_code, _equation_code,
    _arithmetic_code,
)


def solution_code(question: str) -> str | None:
    """A Python script that prints the answer to ``question``, or ``None`` if unrecognised.

    >>> print(solution_code("Find the Least Common Multiple (LCM) of these numbers: 4, 6"))
    import math
    print(math.lcm(*[4, 6]))
    """
    for solver in _SOLVERS:
        code = solver(question)
        if code is not None:
            return code.strip()
    return None


def _last_result(prompt: str, question: str) -> str | None:
    """The first line of the last execution result after the question, if any."""
    cut = prompt.rfind(question) if question else -1
    transcript = prompt[cut + len(question):] if cut >= 0 else prompt
    at = transcript.rfind(RESULT_PREFIX)
    if at < 0:
        return None
    output = transcript[at + len(RESULT_PREFIX):].strip()
    return output.splitlines()[0].strip() if output else ""


@register_agent("math-coder")
class MathCoderAgent(Agent):
    """Writes a script for a recognised arithmetic problem, then boxes its printed result."""

    name = "math-coder"
    envs = ("tir_math",)

    def __init__(self, **_: object) -> None:
        pass

    def turn(self, prompt: str, question: str) -> str:
        """One turn: code on the first turn, the boxed result once a result is in the prompt."""
        result = _last_result(prompt, question)
        if result is not None:
            return f"The script printed the answer.\n{_fence(f'final_answer({result!r})')}"
        code = solution_code(question)
        if code is None:
            return "I do not recognise this kind of problem, so I cannot answer it: \\boxed{?}"
        return (f"I will compute the answer with Python.\n{_fence(code)}\n"
                "Once it has run, I will report the result.")

    def act(self, requests: Sequence[AgentRequest]) -> list[str]:
        return [self.turn(r.prompt, str(r.info.get("task", ""))) for r in requests]


@register_agent("math-random")
class MathRandomAgent(Agent):
    """Boxes a random integer in [-1000, 1000] at once.

    The guess is a function of the agent's seed, the prompt and the request's sample index, so
    the samples of one task differ while reruns repeat.
    """

    name = "math-random"
    envs = ("tir_math",)

    def __init__(self, seed: int = 0, **_: object) -> None:
        self.seed = int(seed)

    def act(self, requests: Sequence[AgentRequest]) -> list[str]:
        replies = []
        for request in requests:
            key = [self.seed, request.sample, zlib.crc32(request.prompt.encode("utf-8"))]
            guess = int(np.random.default_rng(key).integers(-1000, 1001))
            replies.append(f"A guess: \\boxed{{{guess}}}")
        return replies
