"""Graders of a TIR Math transcript: the study's (the default) and ARLArena's strict one.

Holds :data:`GRADERS`, :func:`study_answer`, :func:`normalize_answer`, :func:`strict_answer` and
:func:`grade`.

The study (``utils/reward_score/hf_math_verify.py`` with ``qwen_math_eval_toolkit/parser.py``,
the Qwen2.5-Math evaluation parser) reads the whole response, tool outputs included, cut at the
first stop word: the content of the last ``boxed``, else what follows the last "he answer is",
else "final answer is", else the last number. It normalises that (LaTeX spellings, ``\\text``
and unit words dropped, number words to digits, ``a/b`` to ``\\frac``, ...) and compares
``\\boxed{answer}`` with ``\\boxed{reference}``: math-verify parses both, and any pair of parsed
values that are both sympy objects is compared by ``sympy_expr_eq`` (float rounding 6, numeric
precision 15, strict), any pair of strings by equality. A response with no boxed answer can
still score by its last number.

``strict`` (ARLArena's choice, a named option): only the last ``\\boxed{}`` outside code blocks
counts (printed output counts, code does not), compared by :func:`~arlarena_envs.tir_math.answer.
is_equivalent`; a response without one scores 0.
"""

from __future__ import annotations

import re

from arlarena_envs.tir_math.answer import extract_boxed, is_equivalent, verify_study
from arlarena_envs.tir_math.turns import prose

__all__ = [
    "GRADERS", "MAX_GRADED_CHARS", "grade", "normalize_answer", "strict_answer", "study_answer",
]

GRADERS = ("study", "strict")
"""The graders :func:`grade` knows."""

MAX_GRADED_CHARS = 1_000
"""An extracted answer is cut to this length before the study's normalisation, whose regular
expressions take time quadratic in it (no reference is nearly this long)."""

_STOP_WORDS = ("</s>", "<|im_end|>", "<|endoftext|>", "[END]")
_LAST_NUMBER = re.compile(r"-?\d*\.?\d+")
# Unit words the parser drops (MathQA's list, as the study's parser has it; each is used as a
# regular expression, plural forms after the singular ones).
_UNIT_WORDS = (
    "east", "degree", "mph", "kmph", "ft", "m sqaure", " m east", "sq m", "deg", "mile", "q .",
    "monkey", "prime", "ratio", "profit of rs", "rd", "o", "gm", "p . m", "lb", "tile", "per",
    "dm", "lt", "gain", "ab", "way", "west", "a .", "b .", "c .", "d .", "e .", "f .", "g .",
    "h .", "t", "a", "h", "no change", "men", "soldier", "pie", "bc", "excess", "st", "inches",
    "noon", "percent", "by", "gal", "kmh", "c", "acre", "rise", "a . m", "th", "π r 2", "sq",
    "mark", "l", "toy", "coin", "sq . m", "gallon", "° f", "profit", "minw", "yr", "women",
    "feet", "am", "pm", "hr", "cu cm", "square", "v â € ™", "are", "rupee", "rounds", "cubic",
    "cc", "mtr", "s", "ohm", "number", "kmph", "day", "hour", "minute", "min", "second", "man",
    "woman", "sec", "cube", "mt", "sq inch", "mp", "∏ cm ³", "hectare", "more", "sec", "unit",
    "cu . m", "cm 2", "rs .", "rs", "kg", "g", "month", "km", "m", "cm", "mm", "apple", "liter",
    "loss", "yard", "pure", "year", "increase", "decrease", "d", "less", "Surface", "litre",
    "pi sq m", "s .", "metre", "meter", "inch",
)
_UNITS = tuple(re.compile(r"(^|\W)" + unit + r"($|\W)") for unit in
               (*_UNIT_WORDS, *(unit + "s" for unit in _UNIT_WORDS)))
_REPLACEMENTS = (
    ("tfrac", "frac"), ("dfrac", "frac"), ("\\neq", "\\ne"), ("\\leq", "\\le"),
    ("\\geq", "\\ge"), ("\\left", ""), ("\\right", ""), ("\\{", "{"), ("\\}", "}"),
)


def _balanced(text: str) -> str:
    """What follows an opening brace at ``text[0]`` up to its closing brace (or the end)."""
    depth, end = 1, len(text)
    for index, char in enumerate(text[1:], start=1):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth == 0:
            end = index
            break
    return text[1:end]


def study_answer(response: str) -> str:
    r"""The study's answer of a whole response: boxed, "the answer is" or the last number.

    >>> study_answer(r"so \boxed{\dfrac{1}{2}} or rather \boxed{3/4}.")
    '\\frac{3}{4}'
    >>> study_answer("The answer is 12 apples."), study_answer("x = 3, then y = 7.5")
    ('12', '7.5')
    """
    text = response
    for stop in _STOP_WORDS:
        if stop in text:
            text = text.split(stop)[0].strip()
    text = text.replace("\u043a\u0438", "")
    if "final answer is $" in text and "$. I hope" in text:
        answer = text.split("final answer is $", 1)[1].split("$. I hope", 1)[0].strip()
    elif "boxed" in text:
        tail = text.split("boxed")[-1]
        if not tail:
            return ""
        answer = _balanced(tail) if tail[0] == "{" else tail.split("$")[0].strip()
    elif "he answer is" in text:
        answer = text.split("he answer is")[-1].strip()
    elif "final answer is" in text:
        answer = text.split("final answer is")[-1].strip()
    elif "答案是" in text:
        answer = text.split("答案是")[1].strip().split("\n\n")[0].strip()
    else:
        numbers = _LAST_NUMBER.findall(text.replace(",", ""))
        answer = numbers[-1] if numbers else ""
    answer = re.sub(r"\n\s*", "", answer[:MAX_GRADED_CHARS])
    answer = answer[1:] if answer.startswith(":") else answer
    answer = answer[:-1] if answer.endswith(".") else answer
    answer = answer[:-1] if answer.endswith("/") else answer
    return normalize_answer(answer)


def _number_words(text: str) -> str:
    from word2number import w2n

    try:
        return str(w2n.word_to_num(text))
    except Exception:  # the parser keeps the text whenever word2number fails
        return text


def _fix_fracs(text: str) -> str:
    head, *parts = text.split("\\frac")
    out = head
    for part in parts:
        out += "\\frac"
        if part.startswith("{"):
            out += part
        elif len(part) < 2:
            return text
        elif part[1] != "{":
            out += "{" + part[0] + "}{" + part[1] + "}" + part[2:]
        else:
            out += "{" + part[0] + "}" + part[1:]
    return out


def _fix_slash(text: str) -> str:
    parts = text.split("/")
    if len(parts) != 2:
        return text
    try:
        a, b = (part if "sqrt" in part else int(part) for part in parts)
    except ValueError:
        return text
    return f"\\frac{{{a}}}{{{b}}}" if text == f"{a}/{b}" else text


def normalize_answer(answer: str) -> str:
    r"""The study parser's normalisation of an extracted answer (its ``strip_string``).

    >>> normalize_answer(r"\left( 3, \dfrac{1}{2} \right)"), normalize_answer("5 cm")
    ('(3,\\frac{1}{2})', '5')
    >>> normalize_answer("x = 1/2"), normalize_answer("twenty"), normalize_answer("50\\%")
    ('\\frac{1}{2}', '20', '50')
    """
    text = str(answer).strip().replace("\n", "").rstrip(".").replace("\\!", "")
    text = re.sub(r"\\begin\{array\}\{.*?\}", r"\\begin{pmatrix}", text)
    text = re.sub(r"\\end\{array\}", r"\\end{pmatrix}", text).replace("bmatrix", "pmatrix")
    for old, new in _REPLACEMENTS:
        text = text.replace(old, new)
    without_unit = re.sub(r"\\text{.*?}$", "", text).strip()
    if without_unit and without_unit != text:
        text = without_unit
    for _ in range(2):
        for unit in _UNITS:
            text = unit.sub(r"\1\2", text) or text
    for old in ("^{\\circ}", "^\\circ", "\\$", "$", "\\(", "\\)"):
        text = text.replace(old, "")
    text = re.sub(r"\\text\{(.*?)\}", r"\1", _number_words(text))
    for old in ("x=", "y=", "z=", "x\\in", "y\\in", "z\\in", "x\\to", "y\\to", "z\\to"):
        text = text.replace(old, "")
    text = text.replace("\\emptyset", "{}").replace("(-\\infty,\\infty)", "\\mathbb{R}")
    text = text.replace("\\%", "").replace("%", "").replace(" .", " 0.").replace("{.", "{0.")
    text = text.replace("infinity", "\\infty")
    if "\\infty" not in text:
        text = text.replace("inf", "\\infty")
    text = text.replace("+\\inity", "\\infty").replace("and", "").replace("\\mathbf", "")
    text = re.sub(r"\\mbox{.*?}", "", text)
    if "j" in text and "i" not in text:
        text = text.replace("j", "i")
    text = re.sub(r"(\d+)\.0*([^\d])", r"\1\2", text)
    text = re.sub(r"(\d+)\.0*$", r"\1", text)
    if not text:
        return text
    if text[0] == ".":
        text = "0" + text
    sides = text.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:
        text = sides[1]
    text = re.sub(r"\\sqrt(\w+)", r"\\sqrt{\1}", text).replace(" ", "")
    return _fix_slash(_fix_fracs(text))


def strict_answer(transcript: str) -> str | None:
    """The last ``\\boxed{}`` outside code blocks (printed output included), or ``None``."""
    return extract_boxed(prose(transcript))


def grade(
    transcript: str, reference: str, grader: str = "study", *, timeout_s: float = 5.0
) -> tuple[str | None, bool]:
    """``(prediction, correct)`` of a whole transcript under ``grader`` (see the module docs)."""
    if grader == "study":
        prediction = study_answer(transcript)
        target = prediction if "\\boxed" in prediction else f"\\boxed{{{prediction}}}"
        gold = reference if "\\boxed" in reference else f"\\boxed{{{reference}}}"
        return prediction, verify_study(gold, target, timeout_s)
    if grader == "strict":
        prediction = strict_answer(transcript)
        return prediction, is_equivalent(prediction, reference, timeout_s=timeout_s)
    raise ValueError(f"unknown grader {grader!r}; known: {', '.join(GRADERS)}")
