"""The math-verify helper process of :mod:`arlarena_envs.tir_math.answer`.

Run as a script, it reads one JSON request per line from stdin (``gold``, ``pred``,
``timeout``) and writes ``{"equal": bool}`` per line to stdout. Running in its own main thread,
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


def serve() -> None:
    """Answer requests until stdin closes."""
    import math_verify  # noqa: F401  (import once, before the first request's deadline)

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            timeout = max(1, round(float(request.get("timeout", 5))))
            equal = _check(str(request["gold"]), str(request["pred"]), timeout)
        except Exception:
            equal = False
        print(json.dumps({"equal": equal}), flush=True)


if __name__ == "__main__":
    serve()
