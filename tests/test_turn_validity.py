"""scripts/turn_validity.py: a model's accepted moves split by what came before them, on
hand-made turns and on a real noisy expert's episodes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from arlarena_baselines.evaluation import EvalConfig, evaluate
from arlarena_baselines.rollout.envs import EnvFactory
from wrappers.agents import make_agent

_SPEC = importlib.util.spec_from_file_location(
    "turn_validity", Path(__file__).resolve().parents[1] / "scripts" / "turn_validity.py")
turn_validity = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(turn_validity)


def test_turns_are_split_by_their_episodes_previous_turn_in_step_order():
    def turn(episode, step, ok):
        return {"type": "turn", "episode_id": episode, "step": step, "format_ok": ok}

    records = [turn("a", 1, True), turn("b", 0, True), turn("a", 0, False), turn("a", 2, False),
               turn("b", 1, True), {"type": "episode", "episode_id": "a"}]
    assert turn_validity.turn_validity(records) == {
        "first": (1, 2), "after accepted": (1, 2), "after rejected": (1, 1)}


def test_a_noisy_experts_results_print_a_row(tmp_path, capsys):
    path = tmp_path / "eval.jsonl"
    factory = EnvFactory("ARLArena/ALFWorld-Compact-v0", {"cache_dir": str(tmp_path / "games")},
                         history_length=0, template="alfworld_compact")
    evaluate(EvalConfig(factory, episodes=3), make_agent("expert", invalid=0.5, seed=1), path,
             progress=False)
    turns = [r for r in map(json.loads, path.read_text().splitlines()) if r.get("type") == "turn"]
    counts = turn_validity.turn_validity(turns)
    assert counts["first"][1] == 3
    assert sum(n for _, n in counts.values()) == len(turns)
    assert sum(ok for ok, _ in counts.values()) == sum(t["format_ok"] for t in turns)
    assert counts["after rejected"][1] > 0  # the expert's rejected moves were followed up
    assert turn_validity.main([str(path)]) == 0
    assert capsys.readouterr().out.startswith(f"{path}: accepted: first ")
