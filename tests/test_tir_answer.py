"""TIR Math answers: \\boxed{} extraction and equivalence with the reference (math-verify)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from arlarena_envs.tir_math.answer import _WORKER, clean_answer, extract_boxed, is_equivalent
from arlarena_envs.tir_math.grader import grade

# (prediction, reference, equivalent?)
PAIRS = [
    # integers, decimals, fractions
    ("42", "42", True),
    ("42.0", "42", True),
    ("41", "42", False),
    ("-7", "7", False),
    ("5,050", "5050", True),
    ("1e3", "1000", True),
    ("0.5", "1/2", True),
    ("13524/57134", "138/583", True),
    ("421.25730000000004", "421.2573", True),
    ("0.333", "1/3", False),
    ("\\frac{1}{2}", "1/2", True),
    ("\\frac12", "0.5", True),
    ("\\dfrac{3}{4}", "0.75", True),
    ("\\frac{2}{3}", "\\frac{3}{2}", False),
    ("50\\%", "0.5", True),
    # radicals and constants
    ("\\sqrt{2}", "sqrt(2)", True),
    ("\\frac{\\sqrt{2}}{2}", "1/\\sqrt{2}", True),
    ("2\\sqrt{3}", "\\sqrt{12}", True),
    ("\\sqrt{3}", "\\sqrt{2}", False),
    ("6.283185307", "2\\pi", True),
    ("\\pi/2", "90", False),
    ("\\infty", "\\infty", True),
    ("-\\infty", "\\infty", False),
    # intervals, sets, tuples
    ("[-1,1]", "[-1, 1]", True),
    ("(-1,1)", "[-1,1]", False),
    ("(0, 1]", "(0,1]", True),
    ("\\{2,1\\}", "\\{1,2\\}", True),
    ("9,4,1", "1, 4, 9", True),
    ("1, 4", "1, 4, 9", False),
    ("9", "1, 4, 9", False),
    ("(3,2)", "(2,3)", False),
    # expressions, LaTeX versus plain
    ("2**(n-1)", "2^{n-1}", True),
    ("2^(n-1)", "2^{n-1}", True),
    ("(x+1)^2", "x^2+2x+1", True),
    ("x^2", "x^3", False),
    ("x = 5", "5", True),
    ("x=6,y=5", "x=6, y=5", True),
    ("-15+3i", "-15.0 + 3.0i", True),
    ("-15-3i", "-15.0 + 3.0i", False),
    # words and wrappers
    ("yes", "Yes", True),
    ("\\text{No}", "Yes", False),
    ("'42'", "42", True),
    ("$42$.", "42", True),
    ("\\boxed{42}", "42", True),
    ("", "5", False),
    (None, "5", False),
    ("The final answer goes here.", "5", False),
]


@pytest.mark.parametrize(("prediction", "reference", "expected"), PAIRS)
def test_equivalence_table(prediction: str | None, reference: str, expected: bool) -> None:
    assert is_equivalent(prediction, reference) is expected


def test_table_is_big_and_balanced() -> None:
    assert len(PAIRS) >= 40
    assert 15 <= sum(not equal for *_, equal in PAIRS) <= len(PAIRS) - 15


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is \\boxed{5}.", "5"),
        ("\\boxed{1} then \\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{\\{1, \\{2\\}\\}}", "\\{1, \\{2\\}\\}"),
        ("nested \\boxed{\\sqrt{\\frac{a}{b}}} end", "\\sqrt{\\frac{a}{b}}"),
        ("\\fbox{7}", "7"),
        ("$\\boxed 12$", "12"),
        ("\\boxed{'The final answer goes here.'}", "'The final answer goes here.'"),
        ("no answer", None),
        ("\\boxed{unclosed", None),
        ("\\boxed{3} and \\boxed{unclosed", "3"),
    ],
)
def test_extract_boxed(text: str, expected: str | None) -> None:
    assert extract_boxed(text) == expected


def test_extract_boxed_is_linear_on_huge_input() -> None:
    """Ten times the input takes some ten times as long (a quadratic scan: a hundred), each
    size timed at its best of three in this test."""
    cases = [(lambda n: "\\boxed{" * n + "x", None), (lambda n: "\\boxed{1}" + "{" * n, "1")]
    for make, expected in cases:
        seconds = {}
        for n in (2_000, 20_000):
            text, best = make(n), float("inf")
            for _ in range(3):
                start = time.perf_counter()
                assert extract_boxed(text) == expected
                best = min(best, time.perf_counter() - start)
            seconds[n] = best
        assert seconds[20_000] < 30 * seconds[2_000], seconds


def test_clean_answer() -> None:
    assert clean_answer("  $\\text{Yes}$. ") == "Yes"
    assert clean_answer("\"12\"") == "12"
    assert clean_answer("\\displaystyle \\frac{1}{2}") == "\\frac{1}{2}"


def test_slow_checks_time_out_in_threads_and_the_checker_recovers() -> None:
    """The hard pair is equal, so ``False`` means the check timed out; the host waited no longer
    than its bound (three timeouts and a second) beyond what an easy check costs here, with its
    helper started afresh."""
    hard = ("\\prod_{k=1}^{100000} (x+k)", "\\prod_{k=1}^{100000} (k+x)")
    easy = ("\\frac{\\sqrt{8}}{2}", "\\sqrt{2}")

    def check(pair: tuple[str, str]) -> tuple[bool, float]:
        start = time.monotonic()
        return is_equivalent(*pair, timeout_s=1), time.monotonic() - start

    _WORKER.stop()
    assert check(easy)[0] is True
    _WORKER.stop()
    baseline = check(easy)[1]  # a helper's start and one check
    with ThreadPoolExecutor(2) as pool:
        (slow, slow_s), (still_easy, _) = pool.map(check, [hard, easy])
    assert slow is False and slow_s < 3 * 1 + 1 + baseline, (slow_s, baseline)
    assert still_easy is True
    assert is_equivalent("\\frac{2}{4}", "0.5") is True


# The study's grader, verdicts read off its code: recipe/math_agent/utils/reward_score/
# qwen_math_eval_toolkit/parser.py (extract_answer, lines 456-530: "boxed" 471-491, "he answer
# is" 492-493, the last number 499-508; strip_string, lines 209-347, with the unit words of lines
# 71-206) and hf_math_verify.py (compute_score, lines 134-185; verify_without_timeout, 68-120).
# (response, reference, the study's prediction, correct?)
STUDY_VERDICTS = [
    ("so \\boxed{\\dfrac{1}{2}}", "1/2", "\\frac{1}{2}", True),  # dfrac -> frac
    ("The answer is 12 apples.", "12", "12", True),  # "he answer is", "apples" dropped
    ("x = 3, then y = 7.5", "7.5", "7.5", True),  # no box: the last number
    ("\\boxed{5 \\text{ cm}}", "5", "5", True),  # a trailing \text{...} dropped
    ("\\boxed{twenty}", "20", "20", True),  # number words to digits
    ("\\boxed{0.3333333}", "1/3", "0.3333333", True),  # floats rounded to 6 places
    ("\\boxed{2^(m+1)}", "2^(m+1)", "2^(+1)", False),  # "m" is a unit word
    ("\\boxed{[0,1)}", "[0,1]", "[0,1)", False),
    ("no number at all", "3", "", False),
    ("\\boxed{1} first, then \\boxed{2}", "2", "2", True),  # the last box
]


@pytest.mark.parametrize(("response", "reference", "prediction", "correct"), STUDY_VERDICTS)
def test_the_study_grader(response: str, reference: str, prediction: str, correct: bool) -> None:
    assert grade(response, reference) == (prediction, correct)


def test_the_strict_grader_wants_a_box() -> None:
    assert grade("The answer is 12 apples.", "12", "strict") == (None, False)
    assert grade("```py\nprint('\\\\boxed{3}')\n```\nCode execution result: \\boxed{3}\n", "3",
                 "strict") == ("3", True)
