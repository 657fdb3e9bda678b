"""The text rule's costs: building the spaces, the env boundary per step, cleaning large text.

Run ``python bench/text.py``. Each line prints a ratio against a peer measured in the same run:

* space: building :func:`~arlarena_envs.base.text_space` (a ``PromptWrapper`` builds one per
  env) against Gymnasium's ``Text`` over the printable BMP (the space it replaces), time and
  memory (``tracemalloc`` peak);
* boundary: a Sokoban step and a bare ``SokobanEnv`` step through the boundary against the same
  step with the boundary unwrapped (``functools.wraps`` keeps the raw method as ``__wrapped__``);
* clean: :func:`~arlarena_envs.base.clean_text` on 1 MB of clean text, of emoji, and of NUL,
  against ``str.encode("utf-8")`` of the same clean text (one pass over it).
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from gymnasium import spaces

from arlarena_envs.base import clean_text, text_space
from arlarena_envs.sokoban.env import SokobanEnv


def _best(fn: Callable[[], Any], repeat: int) -> float:
    """The best of ``repeat`` timings of ``fn`` (seconds)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _peak(fn: Callable[[], Any]) -> int:
    """Peak bytes allocated while ``fn`` runs (``fn``'s result is kept alive until measured)."""
    tracemalloc.start()
    kept = fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del kept
    return peak


def bench_space(repeat: int) -> None:
    bmp = frozenset(c for c in map(chr, range(0x10000)) if c.isprintable()) | {"\n", "\t"}

    def old() -> spaces.Text:
        return spaces.Text(max_length=100_000, min_length=0, charset=bmp)

    t_old, t_new = _best(old, repeat), _best(text_space, repeat)
    m_old, m_new = _peak(old), _peak(text_space)
    print(f"space: build {t_new * 1e6:.1f} us vs Text over the BMP {t_old * 1e3:.1f} ms "
          f"(x{t_old / t_new:,.0f} faster); memory {m_new:,} B vs {m_old:,} B")


def bench_boundary(steps: int) -> None:
    env = SokobanEnv()
    env.reset(seed=0)
    raw_step = SokobanEnv.step.__wrapped__
    actions = ["up", "down", "left", "right"] * (steps // 4)

    def run(step: Callable[[Any, str], Any]) -> None:
        for action in actions:
            step(env, action)

    t_raw, t_bound = _best(lambda: run(raw_step), 3), _best(lambda: run(SokobanEnv.step), 3)
    print(f"boundary: Sokoban step {t_bound / len(actions) * 1e6:.1f} us with it vs "
          f"{t_raw / len(actions) * 1e6:.1f} us without (x{t_bound / t_raw:.2f})")


def bench_clean(repeat: int) -> None:
    plain = "The quick brown fox. " * 50_000
    peer = _best(lambda: plain.encode("utf-8"), repeat)
    for name, text in (("clean text", plain), ("emoji", "\U0001f600" * 1_000_000),
                       ("NUL", "\x00" * 1_000_000)):
        took = _best(lambda text=text: clean_text(text), repeat)
        print(f"clean: 1M chars of {name}: {took * 1e3:.1f} ms (x{took / peer:.1f} of one UTF-8 "
              "encode of 1 MB)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timings per measure (best kept)")
    parser.add_argument("--steps", type=int, default=4000, help="Sokoban steps per timing")
    args = parser.parse_args(argv)
    bench_space(args.repeat)
    bench_boundary(args.steps)
    bench_clean(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
