"""How far the recorded RL step's float metrics move with the CPU kernels and the thread count.

Run ``python bench/fixture_spread.py`` (``--threads 1,2``, ``--capabilities default,avx2,``).
It runs the RL step of ``tests/test_episode_fixtures.py`` in a fresh process for each
``ATEN_CPU_CAPABILITY`` (empty: unset, the CPU's best) and each torch thread count, then prints
for every float metric of the fixture the spread of the runs (largest minus smallest, and the
largest distance from the recorded value, relative to it) beside the test's tolerance and the
margin (tolerance / largest relative distance). The held-out episodes must be equal in every
run. It exits 1 when a tolerance does not cover a measured distance, so the next engineer can
re-measure on a new machine before trusting the fixture there.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def one_run(threads: int) -> dict:
    """The RL step in a temporary folder of this process, with its CPU capability."""
    import torch

    from tests.test_episode_fixtures import rl_step, save_tiny_models

    with tempfile.TemporaryDirectory() as folder:
        os.environ["ARLARENA_CACHE"] = str(Path(folder) / "cache")
        os.chdir(folder)
        save_tiny_models((("a", 0),))
        found = rl_step(threads)
    found["capability"] = torch.backends.cpu.get_cpu_capability()
    return found


def run_all(capabilities: list[str], threads: list[int]) -> list[dict]:
    """One subprocess per (capability, threads), each printing its run as JSON."""
    runs = []
    for capability in capabilities:
        for count in threads:
            env = dict(os.environ)
            env.pop("ATEN_CPU_CAPABILITY", None)
            if capability:
                env["ATEN_CPU_CAPABILITY"] = capability
            out = subprocess.run([sys.executable, __file__, "--one", str(count)], env=env,
                                 check=True, capture_output=True, text=True).stdout
            run = json.loads(out.splitlines()[-1])
            run["label"] = f"{capability or 'unset'}({run['capability']})/t{count}"
            runs.append(run)
            print(f"ran {run['label']}", file=sys.stderr)
    return runs


def report(runs: list[dict]) -> bool:
    """Print the spread table; whether every tolerance covers its measured distance."""
    from tests.test_episode_fixtures import FIXTURES, tolerance

    recorded = json.loads((FIXTURES / "rl.json").read_text())
    ok = all(run["episodes"] == recorded["episodes"] for run in runs)
    print(f"runs: {', '.join(run['label'] for run in runs)}")
    print(f"held-out episodes equal to the fixture in every run: {ok}")
    print(f"{'metric':<32} {'recorded':>14} {'spread':>9} {'rel dist':>9} {'rel tol':>8} "
          f"{'abs tol':>8} {'margin':>7}")
    for step, old in enumerate(recorded["metrics"]):
        for key, value in sorted(old.items()):
            if not isinstance(value, float):
                continue
            values = [run["metrics"][step][key] for run in runs]
            distance = max(abs(v - value) for v in values)
            rel = distance / abs(value) if value else distance
            rel_tol, abs_tol = tolerance(key)
            allowed = max(rel_tol * abs(value), abs_tol)
            covered = distance <= allowed
            ok &= covered
            if distance or rel_tol or abs_tol:
                margin = f"{allowed / distance:7.0f}" if distance else "    inf"
                print(f"{f'{step}:{key}':<32} {value:>14.7g} {max(values) - min(values):>9.2g} "
                      f"{rel:>9.2g} {rel_tol:>8.0e} {abs_tol:>8.0e} {margin}"
                      f"{'' if covered else '  NOT COVERED'}")
    print("(metrics not listed: equal in every run and compared exactly)")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2", help="torch thread counts (comma list)")
    parser.add_argument("--capabilities", default="default,avx2,",
                        help="ATEN_CPU_CAPABILITY values (comma list; empty: unset)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one_run(args.one)))
        return 0
    runs = run_all(args.capabilities.split(","), [int(t) for t in args.threads.split(",")])
    return 0 if report(runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
