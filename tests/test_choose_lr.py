"""scripts/choose_lr.py: the learning rate picked from antithetic probes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "choose_lr", Path(__file__).resolve().parents[1] / "scripts" / "choose_lr.py")
choose_lr = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(choose_lr)


def _probe(lr: float, signal: float, damage: float, t: float = 1.0) -> dict:
    return {"lr": lr, "delta_norm": lr * 10, "results": [
        {"temperature": t, "signal": [signal, 0.01], "damage": [damage, 0.01]}]}


def test_picks_the_largest_net_signal_among_positive_signals():
    probes = [_probe(1e-4, 0.01, 0.0), _probe(3e-4, 0.04, -0.01), _probe(1e-3, 0.06, -0.08)]
    choice = choose_lr.choose(probes, 1.0)
    assert choice["lr"] == 3e-4  # 1e-3 has the largest signal but its damage outweighs it
    assert [p["lr"] for p in choice["probes"]] == [1e-4, 3e-4, 1e-3]


def test_no_positive_signal_falls_back_to_the_smallest_lr():
    choice = choose_lr.choose([_probe(3e-4, -0.01, 0.0), _probe(1e-4, -0.02, 0.0)], 1.0)
    assert choice["lr"] == 1e-4 and "no lr had a positive signal" in choice["why"]


def test_cli_writes_the_choice_and_refuses_a_missing_temperature(tmp_path, capsys):
    paths = []
    for i, probe in enumerate([_probe(1e-4, 0.02, 0.0), _probe(2e-4, 0.03, 0.0)]):
        paths.append(tmp_path / f"p{i}.json")
        paths[-1].write_text(json.dumps(probe))
    out = tmp_path / "lr.json"
    assert choose_lr.main([*map(str, paths), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["lr"] == pytest.approx(2e-4)
    assert "chosen lr 0.0002" in capsys.readouterr().out
    assert choose_lr.main([*map(str, paths), "--temperature", "0.4"]) == 2
    assert "no result at T = 0.4" in capsys.readouterr().err
