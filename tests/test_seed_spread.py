"""scripts/seed_spread.py: the seeds' paired rows and their across-seed spread, read from the
compare.json files that `make learn-seeds` writes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "seed_spread", Path(__file__).resolve().parents[1] / "scripts" / "seed_spread.py")
seed_spread = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(seed_spread)


def _compare(folder: Path, start: float, rl: float, diff_se: float) -> None:
    folder.mkdir(parents=True)
    rows = [{"model": "bc", "episodes": 1024, "success": start, "success_se": 0.015,
             "success_diff": 0.0, "success_diff_se": 0.0},
            {"model": "rl", "episodes": 1024, "success": rl, "success_se": 0.015,
             "success_diff": rl - start, "success_diff_se": diff_se}]
    (folder / "compare.json").write_text(json.dumps(rows))


def test_rows_per_seed_then_the_mean_with_its_across_seed_se(tmp_path):
    for seed, rl in enumerate((0.55, 0.60, 0.65)):
        _compare(tmp_path / f"seed{seed}" / "T1.0", 0.50, rl, 0.01)
        _compare(tmp_path / f"seed{seed}" / "T0.4", 0.60, 0.60, 0.02)
    table = seed_spread.seed_table(tmp_path).splitlines()
    assert table[2] == "| T = 1.0 | 0 | 0.500 | 0.550 | +0.050 ± 0.010 | 5.0 |"
    # differences 0.05, 0.10, 0.15: mean 0.10, SD 0.05, SE 0.05 / sqrt(3)
    assert table[5] == ("| T = 1.0 | mean of 3 | | | +0.100 ± 0.029 (seed SD 0.050; mean paired "
                        "SE 0.010) | |")
    assert table[6].startswith("| T = 0.4 | 0 |") and "+0.000 ± 0.000 (seed SD 0.000" in table[9]


def test_an_empty_folder_or_a_file_of_other_rows_is_a_clear_error(tmp_path, capsys):
    assert seed_spread.main([str(tmp_path)]) == 2
    assert "no seed*/T*/compare.json" in capsys.readouterr().err
    _compare(tmp_path / "seed0" / "T1.0", 0.5, 0.6, 0.01)
    path = tmp_path / "seed0" / "T1.0" / "compare.json"
    path.write_text(json.dumps(json.loads(path.read_text()) * 2))
    assert seed_spread.main([str(tmp_path)]) == 2
    assert "expected the start's row and one RL row, got 4" in capsys.readouterr().err
