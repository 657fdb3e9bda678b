"""Throughput and latency of the TIR Math sandbox.

Runs a trivial script and a numpy/sympy script through :class:`Sandbox`, serially and with
parallel workers (threads, each execution its own sandbox), and prints executions per second
and p50/p95 latency. The peer, measured in the same run, is the same interpreter started with
the same resource limits but without bubblewrap (``unsafe=True``): the ratio column is the
sandbox's throughput over the peer's, i.e. what isolation costs.

    python bench/tir_sandbox.py [--runs 40] [--workers 1,2,4]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from arlarena_envs.tir_math.sandbox import ExecStatus, Sandbox

SCRIPTS = {
    "trivial": "print(sum(range(10)))",
    "numpy+sympy": (
        "import numpy as np, sympy as sp\n"
        "a = np.random.default_rng(0).random((50, 50))\n"
        "print(round(float(np.linalg.det(a @ a.T)), 3), sp.factorint(2**32 + 1))"
    ),
}


def measure(sandbox: Sandbox, code: str, runs: int, workers: int) -> tuple[float, float, float]:
    """(executions per second, p50 ms, p95 ms) of ``runs`` executions on ``workers`` threads."""

    def one(_: int) -> float:
        start = time.perf_counter()
        result = sandbox.run(code)
        if result.status is not ExecStatus.OK:
            raise RuntimeError(f"benchmark script failed: {result.output()}")
        return time.perf_counter() - start

    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        latencies = sorted(pool.map(one, range(runs)))
    wall = time.perf_counter() - start
    p95 = latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))]
    return runs / wall, statistics.median(latencies) * 1000, p95 * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="executions per trivial cell "
                        "(numpy+sympy cells run a quarter as many, at least 8)")
    parser.add_argument("--workers", default="1,2,4", help="comma-separated thread counts")
    args = parser.parse_args()
    logging.getLogger("arlarena_envs.tir_math.sandbox").setLevel(logging.ERROR)
    sandboxes = {"bwrap": Sandbox(), "no-isolation": Sandbox(unsafe=True)}
    workers = [int(w) for w in args.workers.split(",")]
    print(f"{'script':<12} {'workers':>7} {'runs':>5} {'sandbox/s':>10} {'p50 ms':>8} "
          f"{'p95 ms':>8} {'peer/s':>8} {'p50 ms':>8} {'ratio':>6}")
    for name, code in SCRIPTS.items():
        runs = args.runs if name == "trivial" else max(8, args.runs // 4)
        for count in workers:
            rate, p50, p95 = measure(sandboxes["bwrap"], code, runs, count)
            peer_rate, peer_p50, _ = measure(sandboxes["no-isolation"], code, runs, count)
            print(f"{name:<12} {count:>7} {runs:>5} {rate:>10.1f} {p50:>8.0f} {p95:>8.0f} "
                  f"{peer_rate:>8.1f} {peer_p50:>8.0f} {rate / peer_rate:>6.2f}")


if __name__ == "__main__":
    main()
