"""The committed evidence of ``make learn`` (docs/learn/, and docs/learn/steps32/ for the same run
trained on to step 32) holds together: each temperature's ``compare.json`` is what its
per-episode files give, the record (docs/rl-vs-bc.md, whose table the training page includes)
quotes it, and RL's paired gain over BC is beyond the standard errors the record claims."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from arlarena_baselines.evaluation import read_records
from arlarena_baselines.evaluation.paired import paired_comparison

ROOT = Path(__file__).resolve().parents[1]
LEARN = ROOT / "docs" / "learn"
# (folder, the record's row label: RL steps | sampling, the standard errors RL's gain must
# clear; None: no claim)
COMPARISONS = [
    ("T1.0", "16 | T = 1, the training sampling", 3.0),
    ("T0.4", "16 | T = 0.4, the study's Sokoban evaluation", None),
    ("steps32/T1.0", "32 | T = 1", 3.0),
    ("steps32/T0.4", "32 | T = 0.4", 2.0),
]


def episodes(path: Path) -> dict[str, float]:
    """Won per episode of a results file (what ``arlarena eval`` and ``train compare`` write)."""
    return {r["episode_id"]: float(r["won"]) for r in read_records(path) if r["type"] == "episode"}


@pytest.mark.parametrize("folder,label,bound", COMPARISONS)
def test_the_committed_comparison_is_what_its_episodes_give(folder, label, bound):
    rows = json.loads((LEARN / folder / "compare.json").read_text())
    bc, rl = episodes(LEARN / folder / "0.jsonl.gz"), episodes(LEARN / folder / "1.jsonl.gz")
    assert len(bc) == len(rl) == rows[0]["episodes"] == rows[1]["episodes"] >= 1024
    c = paired_comparison(bc, rl)
    assert (c.mean_a, c.mean_b) == pytest.approx((rows[0]["success"], rows[1]["success"]))
    assert (c.diff, c.se_diff) == pytest.approx((rows[1]["success_diff"],
                                                 rows[1]["success_diff_se"]))
    if bound is not None:
        assert c.diff > bound * c.se_diff
    record = (ROOT / "docs" / "rl-vs-bc.md").read_text().replace("\N{MINUS SIGN}", "-")
    row = re.search(rf"^\| {re.escape(label)} \| (.*) \|$", record, re.M).group(1).split(" | ")
    assert row == [f"{c.mean_a:.3f} ± {c.se_a:.3f}", f"{c.mean_b:.3f} ± {c.se_b:.3f}",
                   f"{c.diff:+.3f} ± {c.se_diff:.3f}", f"{c.z:.1f}"]


def test_the_committed_curves_are_the_runs_metrics():
    """The plotted run is the committed one: 16 (and 32) steps, one on-policy update each (the
    ratio 1 at every step), held-out success logged every 2 steps from step 0."""
    for folder, steps in ((LEARN, 16), (LEARN / "steps32", 32)):
        records = list(read_records(folder / "metrics.jsonl"))
        evaluated = [r["step"] for r in records if "eval/success_rate" in r]
        assert evaluated == list(range(0, steps + 1, 2))
        updates = [r for r in records if "actor/ratio_mean" in r]
        assert [r["step"] for r in updates] == list(range(1, steps + 1))
        assert all(r["actor/ratio_mean"] == pytest.approx(1.0, abs=1e-5) for r in updates)
        assert (folder / "rl_curves.png").stat().st_size > 10_000
