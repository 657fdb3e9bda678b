"""Final answers: pull them out of a response and decide whether they equal the reference.

Holds :func:`extract_boxed` (the last ``\\boxed{...}``, nested braces included),
:func:`clean_answer`, :func:`is_equivalent` and :func:`verify_study` (the study's comparison,
for :mod:`arlarena_envs.tir_math.grader`).

Equivalence is decided, cheapest first, by: identical text (ignoring spaces and case); plain
numbers (integers and fractions exactly, decimals within 1e-6, relative beyond 1); word answers
such as ``Yes``/``No`` by their words; everything else -- LaTeX, radicals, intervals, sets,
expressions -- by ``math-verify``. math-verify's own timeouts use ``signal.alarm``, which works
only in a main thread and would clobber the caller's alarms, so it runs in a helper process
(started on first use, shared by the threads of this process) whose answers come back within a
deadline; a check that overruns it counts as "not equal" and the helper is restarted.
"""

from __future__ import annotations

import atexit
import json
import re
import select
import subprocess
import sys
import threading
from fractions import Fraction
from pathlib import Path

__all__ = ["clean_answer", "extract_boxed", "is_equivalent", "verify_study"]

_BOXED = re.compile(r"\\(?:boxed|fbox)\b\s*")
_NUMBER = re.compile(
    r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:[eE][+-]?\d+)?|[+-]?\.\d+(?:[eE][+-]?\d+)?"
)
_FRACTION = re.compile(r"([+-]?\d+)\s*/\s*(\d+)")
_WORDS = re.compile(r"[A-Za-z][A-Za-z ,.'-]*[A-Za-z.]")
_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mbox)\{([^{}]*)\}")
_START_TIMEOUT_S = 60.0


def extract_boxed(text: str) -> str | None:
    r"""The content of the last ``\boxed{...}`` (or ``\fbox``) in ``text``, else ``None``.

    >>> extract_boxed(r"so \boxed{1} or rather \boxed{\frac{1}{2}}.")
    '\\frac{1}{2}'
    >>> extract_boxed(r"\boxed 7 apples"), extract_boxed(r"\boxed{unclosed")
    ('7', None)
    """
    found = None
    pos = 0
    closing: dict[int, int] | None = None
    while (match := _BOXED.search(text, pos)) is not None:
        start = pos = match.end()
        if start < len(text) and text[start] == "{":
            if closing is None:
                closing = _brace_pairs(text)
            end = closing.get(start)
            if end is not None:
                found, pos = text[start + 1 : end].strip(), end + 1
        else:
            token = re.match(r"[^\s$]+", text[start:start + 1000])
            if token:
                found = token.group(0)
    return found


def _brace_pairs(text: str) -> dict[int, int]:
    """Index of each ``{`` → index of its matching ``}`` (unmatched ones are absent)."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for match in re.finditer(r"[{}]", text):
        if match.group(0) == "{":
            stack.append(match.start())
        elif stack:
            pairs[stack.pop()] = match.start()
    return pairs


def clean_answer(answer: str) -> str:
    r"""Strip what surrounds an answer: ``$``, quotes, ``\text{}``, ``\displaystyle``, a final
    period.

    >>> clean_answer(r" $\text{Yes}$. "), clean_answer("'42'")
    ('Yes', '42')
    """
    text = answer.strip()
    for _ in range(3):
        before = text
        text = text.strip().rstrip(".").strip()
        text = re.sub(r"^\$+|\$+$", "", text).strip()
        text = text.replace(r"\displaystyle", "").replace(r"\!", "").strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
            text = text[1:-1].strip()
        text = _TEXT.sub(r"\1", text) if _TEXT.fullmatch(text) else text
        if text == before:
            break
    return text


def _as_number(text: str) -> tuple[Fraction, bool] | None:
    """``(value, is_decimal)`` when ``text`` is a plain number or ``a/b``, else ``None``."""
    compact = text.replace(" ", "")
    fraction = _FRACTION.fullmatch(compact)
    if fraction:
        numerator, denominator = int(fraction.group(1)), int(fraction.group(2))
        return (Fraction(numerator, denominator), False) if denominator else None
    if _NUMBER.fullmatch(compact):
        decimal = any(c in compact for c in ".eE")
        try:
            return Fraction(compact.replace(",", "")), decimal
        except (ValueError, ZeroDivisionError):
            return None
    return None


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z]+", text.lower()))


def is_equivalent(prediction: str | None, reference: str, *, timeout_s: float = 5.0) -> bool:
    """Whether ``prediction`` is mathematically the same answer as ``reference``.

    >>> is_equivalent(r"\\frac{1}{2}", "0.5"), is_equivalent("[0, 1)", "[0,1]")
    (True, False)
    """
    if prediction is None:
        return False
    pred, ref = clean_answer(str(prediction)), clean_answer(str(reference))
    if not pred or not ref:
        return False
    if re.sub(r"\s+", "", pred).lower() == re.sub(r"\s+", "", ref).lower():
        return True
    pred_number, ref_number = _as_number(pred), _as_number(ref)
    if pred_number is not None and ref_number is not None:
        (a, a_decimal), (b, b_decimal) = pred_number, ref_number
        if a_decimal or b_decimal:
            return abs(a - b) <= Fraction(1, 10**6) * max(1, abs(b))
        return a == b
    if _WORDS.fullmatch(ref) and not re.fullmatch(r"[A-Za-z]", ref):
        return _words(pred) == _words(ref)
    return _WORKER.equal(ref.replace("**", "^"), pred.replace("**", "^"), timeout_s)


def verify_study(gold: str, target: str, timeout_s: float = 5.0) -> bool:
    """The study's math-verify check of two ``\\boxed{}`` answers (see
    :mod:`arlarena_envs.tir_math.grader`), in the helper process."""
    return _WORKER.equal(gold, target, timeout_s, mode="study")


class _VerifyWorker:
    """A helper process that runs math-verify (see the module docs); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        atexit.register(self.stop)

    def _start(self) -> subprocess.Popen[str]:
        if self._proc is None or self._proc.poll() is not None:
            script = Path(__file__).with_name("_verify_worker.py")
            self._proc = subprocess.Popen(
                [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, text=True, bufsize=1,
            )
            if self._reply(self._proc, _START_TIMEOUT_S) is None:
                self.stop()
                raise RuntimeError("the math-verify helper did not start (is math-verify "
                                   "installed? pip install math-verify)")
        return self._proc

    @staticmethod
    def _reply(proc: subprocess.Popen[str], timeout_s: float) -> dict | None:
        """The helper's next JSON line, or ``None`` if none comes within ``timeout_s``."""
        assert proc.stdout
        try:
            ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
            line = proc.stdout.readline() if ready else ""
            reply = json.loads(line) if line else None
        except (OSError, ValueError):
            return None
        return reply if isinstance(reply, dict) else None

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def equal(self, gold: str, pred: str, timeout_s: float, mode: str = "verify") -> bool:
        with self._lock:
            proc = self._start()
            assert proc.stdin and proc.stdout
            request = {"gold": gold[:20_000], "pred": pred[:20_000], "timeout": timeout_s,
                       "mode": mode}
            try:
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()
            except OSError:
                self.stop()
                return False
            # Two parses and a comparison, each bounded by the helper's own alarm.
            reply = self._reply(proc, 3 * timeout_s + 1)
            if reply is None:
                self.stop()
                return False
            return bool(reply.get("equal"))


_WORKER = _VerifyWorker()
