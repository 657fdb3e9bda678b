"""Paired differences of one recipe's runs on several training seeds, and their spread.

Reads ``DIR/seed<k>/T<t>/compare.json`` (``arlarena train compare START RL``, as ``make
learn-seeds`` writes them) and prints, per temperature, each seed's start and RL success with
the paired difference and its SE, then the mean difference over the seeds with its across-seed
SD and SE (SD / sqrt(seeds)) beside the mean paired SE: the paired SE sees the held-out levels'
noise only, the across-seed SE also the run-to-run noise of training. Example::

    python scripts/seed_spread.py docs/learn/seeds32
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from arlarena_baselines.arena.stats import across_seeds, paired_row


def seed_table(folder: Path) -> str:
    """The markdown table of ``folder``'s seeds, one block of rows per temperature."""
    runs = sorted(folder.glob("seed*/T*/compare.json"))
    if not runs:
        raise FileNotFoundError(f"no seed*/T*/compare.json under {folder}")
    by_t: dict[str, dict[str, dict]] = {}
    starts: dict[str, dict[str, dict]] = {}
    for path in runs:
        seed, t = path.parent.parent.name, path.parent.name
        rows = json.loads(path.read_text())
        if len(rows) != 2:
            raise ValueError(f"{path}: expected the start's row and one RL row, got {len(rows)}")
        by_t.setdefault(t, {})[seed] = paired_row(rows[1])
        starts.setdefault(t, {})[seed] = paired_row(rows[0])
    lines = ["| sampling | seed | start | RL | paired Δ ± SE | z |", "|---|---|---|---|---|---|"]
    for t in sorted(by_t, key=lambda name: -float(name[1:])):
        for seed, row in sorted(by_t[t].items()):
            lines.append(f"| T = {t[1:]} | {seed[4:]} | {starts[t][seed]['success']:.3f} | "
                         f"{row['success']:.3f} | {row['diff']:+.3f} ± {row['diff_se']:.3f} | "
                         f"{row['z']:.1f} |")
        spread = across_seeds({f"RL/{seed}": row for seed, row in by_t[t].items()})["RL"]
        lines.append(f"| T = {t[1:]} | mean of {spread['seeds']} | | | {spread['diff']:+.3f} ± "
                     f"{spread['seed_se']:.3f} (seed SD {spread['seed_sd']:.3f}; mean paired SE "
                     f"{spread['paired_se']:.3f}) | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the folder of seed<k>/T<t>/compare.json")
    args = parser.parse_args(argv)
    try:
        print(seed_table(args.folder))
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
