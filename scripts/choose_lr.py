"""Choose the learning rate from antithetic probes (``scripts/probe_antithetic.py --json``).

Reads the probes' JSON files and picks, at ``--temperature``, the lr whose one-step signal
stands furthest above what a step of its size costs: the largest signal + damage (the damage,
the part of the change even in δ, is negative where a step of that size costs success whichever
way it points; both on the probe's own games: the validation games in the ALFWorld recipe),
among the lrs whose signal is positive; with none positive it says so and picks the smallest lr
(the safest step). Prints a table of every probe
and writes the choice as JSON (``--out``). Example::

    python scripts/choose_lr.py runs/probe-lr*.json --temperature 1.0 --out runs/lr.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def at_temperature(probe: dict[str, Any], temperature: float) -> dict[str, Any]:
    """The probe's result at ``temperature``; a ``ValueError`` if it has none."""
    for row in probe["results"]:
        if abs(row["temperature"] - temperature) < 1e-9:
            return row
    raise ValueError(f"probe at lr {probe['lr']:g} has no result at T = {temperature:g}")


def choose(probes: list[dict[str, Any]], temperature: float) -> dict[str, Any]:
    """The chosen lr and why (module docs)."""
    rows = []
    for probe in probes:
        row = at_temperature(probe, temperature)
        signal, damage = row["signal"][0], row["damage"][0]
        rows.append({"lr": probe["lr"], "signal": row["signal"], "damage": row["damage"],
                     "net": signal + damage, "delta_norm": probe.get("delta_norm")})
    if not rows:
        raise ValueError("no probe to choose from")
    positive = [r for r in rows if r["signal"][0] > 0]
    if positive:
        best = max(positive, key=lambda r: (r["net"], -r["lr"]))
        why = "the largest signal + damage among the lrs with a positive signal"
    else:
        best = min(rows, key=lambda r: r["lr"])
        why = "no lr had a positive signal: the smallest lr"
    return {"lr": best["lr"], "temperature": temperature, "why": why,
            "probes": sorted(rows, key=lambda r: r["lr"])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("probes", nargs="+", help="JSON files of probe_antithetic.py --json")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--out", default=None, help="write the choice here")
    args = parser.parse_args(argv)
    try:
        probes = [json.loads(Path(p).read_text()) for p in args.probes]
        choice = choose(probes, args.temperature)
    except (OSError, ValueError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"| lr | signal ± SE | damage ± SE | signal + damage |  (T = {args.temperature:g})")
    print("|---|---|---|---|")
    for r in choice["probes"]:
        print(f"| {r['lr']:g} | {r['signal'][0]:+.3f} ± {r['signal'][1]:.3f} | "
              f"{r['damage'][0]:+.3f} ± {r['damage'][1]:.3f} | {r['net']:+.3f} |")
    print(f"chosen lr {choice['lr']:g}: {choice['why']}")
    if args.out:
        Path(args.out).write_text(json.dumps(choice, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
