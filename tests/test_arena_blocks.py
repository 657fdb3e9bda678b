"""The arena report's section across two blocks of a grid made from two starts
(:mod:`arlarena_baselines.arena.blocks`): gains over each block's own start, GRPO on both, and
finding 5 judged over both blocks' methods."""

from __future__ import annotations

import json

import pytest

from arlarena_baselines.arena.blocks import BESIDE_FILE, Block, beside_section, read_block
from arlarena_baselines.arena.results import RunResult, summarize
from arlarena_baselines.arena.runner import RECORD_FILE, cpu_kernels
from arlarena_baselines.cli import main

LEVELS = 100


def _run(method: str, seed: int, wins: int) -> RunResult:
    """A run whose final evaluation at T = 1 won levels 0 … ``wins`` − 1 of ``LEVELS``."""
    role = "start" if method == "checkpoint" else "base"
    record = {"method": method, "role": role, "setting": role, "overrides": [], "seed": seed}
    final = [{"seed": level, "won": level < wins, "score": 0.0, "temperature": 1.0}
             for level in range(LEVELS)]
    return RunResult(None, record, [{"phase": "rl", "step": 0}], [], {}, final)


def _block(name: str, wins: dict[str, tuple[int, int]]) -> Block:
    """A block of two seeds: per method, the levels each seed's run won."""
    runs = [_run(method, seed, n) for method, by_seed in wins.items()
            for seed, n in enumerate(by_seed)]
    return Block(name, f"{name}-weights", "AVX2", summarize(runs))


def _section(here: Block, there: Block) -> str:
    return "\n".join(beside_section(here, there))


def test_gains_are_over_each_blocks_own_start_and_finding_5_reads_both_blocks():
    here = _block("b2", {"checkpoint": (40, 40), "GRPO": (50, 50), "SAMPO": (70, 80)})
    there = _block("b1", {"checkpoint": (20, 20), "GRPO": (35, 35), "CISPO_SM": (60, 60)})
    text = _section(here, there)
    assert "starts from weights b2-weights (CPU kernels: AVX2)" in text
    # SAMPO: +0.30 and +0.40 over its start (0.40), so +0.350 ± 0.050 across the seeds.
    assert "| 1 | SAMPO | b2 | 2 | 0.750 ± 0.050 | +0.350 ± 0.050 | 0: +0.300, 1: +0.400 |" \
        in text
    # CISPO_SM: over its own start (0.20), not over this block's (0.40).
    assert "| 1 | CISPO_SM | b1 | 2 | 0.600 ± 0.035 | +0.400 ± 0.035 |" in text
    # GRPO is in both blocks: its gains +0.10 and +0.15 differ by −0.05 (+1 on 10 levels, −1
    # on 15).
    assert "| 1 | GRPO | b1 | 2 | 0.350 ± 0.034 | +0.150 ± 0.025 |" in text
    assert "GRPO's gain over this block's start − its gain over `b1`'s: -0.050 ± 0.035 " \
           "(n = 200)" in text
    # SAMPO's rival is the largest gain (CISPO_SM's, of the other block), not the largest
    # success; level by level SAMPO − CISPO_SM's gains: −1 on 20 levels, +1 on 10 (seed 0)
    # and 20 (seed 1): −0.050, within 2 SE of 0.
    (finding,) = [line for line in text.splitlines() if line.startswith("| 5 |")]
    assert "**within noise**" in finding and "the best other method is CISPO_SM (0.400)" \
        in finding and "SAMPO − CISPO_SM: -0.050" in finding


def test_a_better_gain_holds_finding_5_and_a_missing_sampo_is_not_run():
    here = _block("b2", {"checkpoint": (40, 40), "GRPO": (50, 50), "SAMPO": (95, 95)})
    there = _block("b1", {"checkpoint": (20, 20), "GRPO": (35, 35), "CISPO_SM": (60, 60)})
    assert "| 5 | SAMPO is best overall. | T = 1, both blocks | **holds** |" \
        in _section(here, there)
    without = _block("b2", {"checkpoint": (40, 40), "GRPO": (50, 50)})
    assert "**not run**" in _section(without, there)


def test_blocks_without_a_common_temperature_compare_nothing():
    here = _block("b2", {"checkpoint": (40, 40), "GRPO": (50, 50)})
    there = Block("b1", "w", "AVX2", summarize(
        [RunResult(None, {**r.record}, r.records, [], {}, [{**e, "temperature": 0.4}
                                                            for e in r.final])
         for c in _block("b1", {"checkpoint": (20, 20)}).configs for r in c.runs]))
    assert _section(here, there).endswith("share no final temperature: nothing to compare.")


def test_a_report_keeps_the_other_block_and_rebuilds_the_section(arena_blocks, tmp_path,
                                                                  capsys):
    """``--beside``: the section is written, the report folder keeps the other block's path
    (relative), and a later report of that folder (or of a copy's) rebuilds it; its own
    block, or a folder with no start, is refused with one line."""
    here, there = arena_blocks
    assert main(["arena", "--report", str(here), "--beside", str(there)]) == 0
    report = (here / "arena.md").read_text()
    assert f"## Beside the other block: {there.name}" in report
    assert "| last | GRPO | b1 | 1 |" in report
    assert json.loads((here / BESIDE_FILE).read_text()) == {"beside": "../b1"}
    again = tmp_path / "again"
    assert main(["arena", "--report", str(here), "--out", str(again)]) == 0
    assert (again / "arena.md").read_text() == report
    capsys.readouterr()
    assert main(["arena", "--report", str(here), "--beside", str(here)]) == 2
    assert "this report's own block" in capsys.readouterr().err
    bare = tmp_path / "bare"
    (bare / "GRPO" / "base" / "seed0").mkdir(parents=True)
    for name in (RECORD_FILE, "rl_config.yaml"):
        (bare / "GRPO" / "base" / "seed0" / name).write_bytes(
            (there / "GRPO" / "base" / "seed0" / name).read_bytes())
    assert main(["arena", "--report", str(here), "--beside", str(bare)]) == 2
    err = capsys.readouterr().err
    assert "holds no start evaluation" in err and len(err.splitlines()) == 1


@pytest.fixture
def arena_blocks(tmp_path, capsys):
    """Two report folders, ``b1`` and ``b2``, of one tiny real arena (GRPO, 2 steps, from the
    same start: the gains agree)."""
    from tests.test_arena import ARGS

    runs = tmp_path / "runs"
    assert main(["arena", *ARGS, "--methods", "GRPO", "--staleness", "0", "--no-stabilisers",
                 "--out", str(runs), "--no-progress"]) == 0
    for name in ("b1", "b2"):
        assert main(["arena", "--report", str(runs), "--out", str(tmp_path / name)]) == 0
    assert read_block(tmp_path / "b1").kernels == cpu_kernels()
    capsys.readouterr()
    return tmp_path / "b2", tmp_path / "b1"
