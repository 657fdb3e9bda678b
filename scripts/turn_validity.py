"""How often a model's move is accepted, by what came before it: an episode's first turn, a
turn after an accepted move, a turn after a rejected one.

A defect check for a student with no history in its prompt: after a rejected move its next
prompt shows only the task, the env's reply to the rejection (ALFWorld's "Nothing happens.")
and the list, a state that demonstrations of accepted moves never show. A student that never
saw it falls apart there. Reads results files of ``arlarena eval`` or a run's evaluation
(their ``turn`` records; gzipped or not; several files print a row each). Example::

    python scripts/turn_validity.py runs/learn-alfworld-bc/heldout/sft_step001482.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections import defaultdict
from collections.abc import Iterable
from itertools import pairwise
from pathlib import Path
from typing import Any

KINDS = ("first", "after accepted", "after rejected")


def turn_validity(records: Iterable[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """(accepted turns, turns) of each of :data:`KINDS` over the ``turn`` records, each
    episode's turns in step order.

    >>> turns = [{"type": "turn", "episode_id": "e", "step": s, "format_ok": ok}
    ...          for s, ok in enumerate([False, False, True, True])]
    >>> turn_validity(turns)
    {'first': (0, 1), 'after accepted': (1, 1), 'after rejected': (1, 2)}
    """
    episodes: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("type") == "turn":
            episodes[str(record["episode_id"])].append(record)
    counts = {kind: [0, 0] for kind in KINDS}
    for turns in episodes.values():
        turns.sort(key=lambda t: t["step"])
        counts["first"][0] += bool(turns[0]["format_ok"])
        counts["first"][1] += 1
        for before, turn in pairwise(turns):
            slot = counts["after accepted" if before["format_ok"] else "after rejected"]
            slot[0] += bool(turn["format_ok"])
            slot[1] += 1
    return {kind: (ok, n) for kind, (ok, n) in counts.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="results files (JSONL, or .gz)")
    args = parser.parse_args(argv)
    for path in args.results:
        with (gzip.open(path, "rt") if path.suffix == ".gz" else path.open()) as handle:
            counts = turn_validity(map(json.loads, handle))
        cells = [f"{kind} {ok / n:.3f} ({n} turns)" if n else f"{kind} -"
                 for kind, (ok, n) in counts.items()]
        print(f"{path}: accepted: " + ", ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
