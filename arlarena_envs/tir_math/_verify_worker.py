"""The math-verify helper process of :mod:`arlarena_envs.tir_math.answer`.

Run as a script, it reads one JSON request per line from stdin (``gold``, ``pred``,
``timeout``, and ``mode``: ``verify``, math-verify's own check of two bare answers, or
``study``, the study's check of two ``\boxed{}`` answers) and writes ``{"equal": bool}`` per
line to stdout. Running in its own main thread,
it can use math-verify's ``signal.alarm`` timeouts safely. Importing it does nothing.
"""

from __future__ import annotations

import json
import sys

__all__ = ["serve"]


def _check(gold: str, pred: str, timeout: int) -> bool:
    from math_verify import parse, verify

    gold_parsed = parse(f"${gold}$", parsing_timeout=timeout)
    if not gold_parsed:
        return False
    pred_parsed = parse(f"${pred}$", parsing_timeout=timeout)
    return bool(pred_parsed) and bool(verify(gold_parsed, pred_parsed, timeout_seconds=timeout))


def _check_study(gold: str, pred: str, timeout: int) -> bool:
    """The study's comparison: every parsed pair, sympy objects by ``sympy_expr_eq`` (float
    rounding 6, numeric precision 15, strict), strings by equality."""
    from itertools import product

    from math_verify import parse
    from math_verify.grader import sympy_expr_eq
    from math_verify.utils import timeout as deadline
    from sympy import Basic, MatrixBase

    @deadline(timeout)
    def same(g: object, p: object) -> bool:
        if isinstance(g, (Basic, MatrixBase)) and isinstance(p, (Basic, MatrixBase)):
            return bool(sympy_expr_eq(g, p, 6, 15, strict=True))
        if isinstance(g, str) and isinstance(p, str):
            return bool(g.strip()) and g.strip() == p.strip()
        return False

    def safe(g: object, p: object) -> bool:
        try:
            return same(g, p)
        except Exception:
            return False

    golds, preds = parse(gold, parsing_timeout=timeout), parse(pred, parsing_timeout=timeout)
    return any(safe(g, p) for g, p in product(golds, preds))


def serve() -> None:
    """Answer requests until stdin closes."""
    import math_verify  # noqa: F401  (import once, before the first request's deadline)

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            timeout = max(1, round(float(request.get("timeout", 5))))
            check = _check_study if request.get("mode") == "study" else _check
            equal = check(str(request["gold"]), str(request["pred"]), timeout)
        except Exception:
            equal = False
        print(json.dumps({"equal": equal}), flush=True)


if __name__ == "__main__":
    serve()
