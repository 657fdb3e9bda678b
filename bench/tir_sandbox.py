"""Latency, isolation overhead and throughput of the TIR Math sandbox.

Peers, measured in the same run and interleaved execution by execution so that a busy machine
weighs on all of them alike:

- ``warm``: :class:`Sandbox` as it ships: as root, each run forked by a warm server (a bwrap
  whose interpreter has numpy and sympy imported), with a cgroup where one can be made;
- ``cold``: the same with ``warm=False``: a bwrap and an interpreter of its own for each run;
- ``no-isolation``: the same interpreter, prelude and resource limits without bubblewrap or
  cgroup (``unsafe=True, cgroups=False``), started afresh for each run; the isolation overhead
  is a sandbox's p50 minus this;
- ``floor``: ``bwrap --unshare-all --ro-bind / / /bin/true`` against ``/bin/true``, what
  bubblewrap itself costs;
- with ``--before REV``: the sandbox of git revision ``REV`` (its ``sandbox.py`` and the
  modules it imports, loaded from ``git show`` as a package of their own), and its own
  no-isolation peer.

It prints p50/p95 latency of a trivial script for each, the overheads, the floor, and
executions per second (the median of three rounds, the peers taking turns) of the trivial and a
numpy/sympy script with 1 and 2 worker threads, and each sandbox's ratio to ``before``.

    python bench/tir_sandbox.py [--runs 40] [--workers 1,2] [--before 6d305b1]

The first warm run of each worker starts its server (numpy and sympy imported): the medians
leave it out, as a long run amortises it.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from arlarena_envs.tir_math.sandbox import Sandbox

TRIVIAL = "print(sum(range(10)))"
NUMERIC = (
    "import numpy as np, sympy as sp\n"
    "a = np.random.default_rng(0).random((50, 50))\n"
    "print(round(float(np.linalg.det(a @ a.T)), 3), sp.factorint(2**32 + 1))"
)
ROOT = Path(__file__).resolve().parents[1]


def load_revision(revision: str) -> object:
    """The ``sandbox`` module of git ``revision``, with the modules it imports of that revision
    (standard library only: the package's private modules and the text rule), loaded as a
    package of their own so that its warm servers and pools are its own too."""
    folder = Path(tempfile.mkdtemp(prefix="tir-before-"))
    package = folder / "tir_before"
    package.mkdir()
    (package / "__init__.py").touch()
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "--name-only", revision, "arlarena_envs/tir_math/",
         "arlarena_envs/text_rule.py"], check=True, capture_output=True, text=True).stdout
    for path in listed.split():
        name = Path(path).name
        if name in {"sandbox.py", "text_rule.py"} or (name.startswith("_") and name[1] != "_"):
            text = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:{path}"],
                                  check=True, capture_output=True, text=True).stdout
            for module in ("arlarena_envs.tir_math.", "arlarena_envs."):
                text = text.replace(module, "tir_before.")
            (package / name).write_text(text)
    sys.path.insert(0, str(folder))
    return importlib.import_module("tir_before.sandbox")


def runner(box: object, code: str) -> Callable[[], None]:
    def run() -> None:
        result = box.run(code)  # type: ignore[attr-defined]
        if not result.ok:
            raise RuntimeError(f"benchmark script failed: {result.output()}")
    return run


def command(argv: list[str]) -> Callable[[], None]:
    return lambda: subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)


def latencies(peers: dict[str, Callable[[], None]], runs: int) -> dict[str, list[float]]:
    """``runs`` timings (seconds) of each peer, interleaved one execution at a time."""
    times: dict[str, list[float]] = {name: [] for name in peers}
    for _ in range(runs):
        for name, run in peers.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return times


def rate(run: Callable[[], None], runs: int, workers: int) -> float:
    """Executions per second of ``runs`` executions on ``workers`` threads."""
    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda _: run(), range(runs)))
    return runs / (time.perf_counter() - start)


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="executions per latency peer and "
                        "per trivial throughput cell (numpy/sympy cells: a quarter, at least 8)")
    parser.add_argument("--workers", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--before", help="a git revision whose sandbox is measured too")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    boxes = {"warm": Sandbox(), "cold": Sandbox(warm=False),
             "no-isolation": Sandbox(unsafe=True, cgroups=False)}
    if args.before:
        before = load_revision(args.before)
        boxes["before"] = before.Sandbox()  # type: ignore[attr-defined]
        boxes["before no-isolation"] = before.Sandbox(unsafe=True)  # type: ignore[attr-defined]
    print(f"memory bound: {boxes['warm'].memory_bound}; warm servers: {boxes['warm'].warm}")
    peers = {name: runner(box, TRIVIAL) for name, box in boxes.items()}
    peers["bwrap /bin/true"] = command(["bwrap", "--unshare-all", "--ro-bind", "/", "/",
                                        "/bin/true"])
    peers["/bin/true"] = command(["/bin/true"])
    times = latencies(peers, args.runs)
    print(f"\ntrivial script, {args.runs} interleaved executions each")
    print(f"{'peer':<22} {'p50 ms':>8} {'p95 ms':>8}")
    for name, values in times.items():
        print(f"{name:<22} {p(values, 0.5):>8.1f} {p(values, 0.95):>8.1f}")
    median = {name: p(values, 0.5) for name, values in times.items()}
    for name in ("warm", "cold"):
        print(f"\nisolation overhead ({name} - no-isolation p50): "
              f"{median[name] - median['no-isolation']:.1f} ms", end="")
    print()
    if args.before:
        print(f"before ({args.before}): "
              f"{median['before'] - median['before no-isolation']:.1f} ms")
    print(f"floor (bwrap /bin/true - /bin/true p50): "
          f"{median['bwrap /bin/true'] - median['/bin/true']:.1f} ms")
    workers = [int(w) for w in args.workers.split(",")]
    print(f"\n{'script':<12} {'workers':>7} " + " ".join(f"{name + '/s':>22}" for name in boxes))
    for script, code in (("trivial", TRIVIAL), ("numpy+sympy", NUMERIC)):
        runs = args.runs if script == "trivial" else max(8, args.runs // 4)
        for count in workers:
            rounds: dict[str, list[float]] = {name: [] for name in boxes}
            for _ in range(3):
                for name, box in boxes.items():
                    rounds[name].append(rate(runner(box, code), runs, count))
            rates = {name: statistics.median(values) for name, values in rounds.items()}
            line = " ".join(f"{value:>22.1f}" for value in rates.values())
            ratio = "".join(f"   {name}/before {rates[name] / rates['before']:.2f}x"
                            for name in ("warm", "cold") if args.before)
            print(f"{script:<12} {count:>7} {line}{ratio}")


if __name__ == "__main__":
    main()
