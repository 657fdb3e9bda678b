"""Task panels: fixed task sets with content hashes that results and run folders record.

Most tests use a data folder of their own (``ARLARENA_DATA``) with a three-level Sokoban panel,
built for real; a changed generator is made real too: the same seeds with other env kwargs
generate other levels. ``test_the_shipped_panels_still_match_the_envs`` generates every task of
every shipped panel (both WebShop shops included) and compares it with the panel file.
"""

from __future__ import annotations

import json
from functools import partial

import pytest

from arlarena_baselines.cli import build_parser, main
from arlarena_envs.panels import (
    PanelError,
    build_panel,
    check_panel,
    data_dir,
    load_panel,
    panel_specs,
)

PANELS = """\
tiny-sokoban:
  env: sokoban
  options: {split: train}
  seed: 100
  count: 3
  about: three levels
tiny-later:
  env: sokoban
  options: {split: train}
  seed: 101
  count: 3
tiny-math:
  env: ARLArena/TIRMath-v0
  options: {split: gen_eval}
  seed: 0
  count: 2
"""
HARDER = {"dim": [7, 7]}  # the same seeds, another generator setting: other levels


@pytest.fixture
def data(tmp_path, monkeypatch):
    root = tmp_path / "data"
    root.mkdir()
    (root / "panels.yaml").write_text(PANELS)
    monkeypatch.setenv("ARLARENA_DATA", str(root))
    build_panel("tiny-sokoban")
    return root


def test_a_built_panel_pins_its_tasks(data):
    panel = load_panel("tiny-sokoban")
    assert data_dir() == data and panel.spec.env == "ARLArena/Sokoban-v0"
    assert len(panel.tasks) == 3 and panel.hash == panel.hash_of(3) != panel.hash_of(2)
    on_disk = json.loads((data / "panels" / "tiny-sokoban.json").read_text())
    assert on_disk["hash"] == panel.hash and len(on_disk["tasks"]) == 3
    check = check_panel(panel)
    assert check.ok and check.actual == panel.hash and check.record()["matches"]
    assert build_panel("tiny-sokoban").hash == panel.hash  # generation is deterministic


def test_a_changed_generator_is_reported_plainly(data):
    check = check_panel(load_panel("tiny-sokoban"), 2, env_kwargs=HARDER)
    assert not check.ok and check.changed == (100, 101)
    assert check.actual != check.expected
    assert "no longer generates the tasks it was built with: 2 of its first 2 of 3" in (
        check.message())
    assert "arlarena data build tiny-sokoban" in check.message()


def test_unbuilt_and_edited_panels_are_refused(data):
    with pytest.raises(PanelError, match="has no hashes yet"):
        load_panel("tiny-math")
    with pytest.raises(PanelError, match="unknown task panel"):
        load_panel("tiny")
    (data / "panels.yaml").write_text(PANELS.replace("seed: 100", "seed: 101"))
    with pytest.raises(PanelError, match=r"edited .* since its hashes were built"):
        load_panel("tiny-sokoban")


def _episodes(folder):
    return [json.loads(line) for path in sorted(folder.glob("*.jsonl"))
            for line in path.read_text().splitlines() if '"type": "episode"' in line]


def test_eval_records_the_panel_and_compare_refuses_mixed_tasks(data, tmp_path, capsys):
    out = tmp_path / "res"
    assert main(["eval", "--panel", "tiny-sokoban", "--agent", "expert,random", "--out",
                 str(out), "--no-progress"]) == 0
    panel = load_panel("tiny-sokoban")
    records = _episodes(out)
    assert sorted(r["seed"] for r in records) == [100, 100, 101, 101, 102, 102]
    assert {json.dumps(r["panel"]) for r in records} == {json.dumps(
        {"name": "tiny-sokoban", "hash": panel.hash, "tasks": 3, "matches": True})}
    files = sorted(str(p) for p in out.glob("*.jsonl"))
    assert main(["report", "--compare", *files]) == 0
    assert f"tiny-sokoban (hash {panel.hash}, 3 tasks): expert, random" in capsys.readouterr().out

    # The same panel after its generator changed: a warning, and a hash of its own.
    other = tmp_path / "other"
    assert main(["eval", "--panel", "tiny-sokoban", "--agent", "random", "--out", str(other),
                 "--env-kwargs", json.dumps(HARDER), "--no-progress"]) == 0
    assert "WARNING: task panel tiny-sokoban no longer generates" in capsys.readouterr().err
    (changed,) = {json.dumps(r["panel"]) for r in _episodes(other)}
    assert '"matches": false' in changed
    mixed = [files[0], f"changed={next(other.glob('*.jsonl'))}"]
    assert main(["report", "--compare", *mixed]) == 2
    err = capsys.readouterr().err
    assert "ran on different tasks" in err and "--mixed-panels" in err
    assert main(["report", "--compare", "--mixed-panels", *mixed]) == 0


def test_eval_takes_no_task_flags_beside_a_panel(data, tmp_path, capsys):
    assert main(["eval", "--panel", "tiny-sokoban", "--seed", "3", "--out", str(tmp_path)]) == 2
    assert "drop --seed" in capsys.readouterr().err
    assert main(["eval", "--panel", "tiny-sokoban", "--episodes", "4", "--out",
                 str(tmp_path)]) == 2
    assert "has 3 tasks" in capsys.readouterr().err


def _train_config(argv):
    from arlarena_baselines.cli.train import build_config, check_panels

    args = build_parser().parse_args(argv)
    config = build_config(args, argv[1])
    return config, check_panels(args, config, argv[1])


def test_train_takes_panels_and_runs_no_other_tasks(data):
    config, records = _train_config(["train", "rl", "--panel", "tiny-sokoban",
                                     "--eval-panel", "tiny-sokoban", "--set", "eval.episodes=2"])
    r = config.rollout
    assert (r.env, r.seed, r.num_tasks, r.reset_options) == ("ARLArena/Sokoban-v0", 100, 3,
                                                              {"split": "train"})
    assert (config.eval.seed, config.eval.episodes) == (100, 2)
    panel = load_panel("tiny-sokoban")
    assert records["train"]["hash"] == panel.hash
    assert records["eval"] == {"name": "tiny-sokoban", "hash": panel.hash_of(2), "tasks": 2,
                               "matches": True}
    sft, _ = _train_config(["train", "sft", "--panel", "tiny-sokoban", "--episodes", "2"])
    assert (sft.sft.seed, sft.sft.episodes) == (100, 2)
    with pytest.raises(ValueError, match=r"has rollout\.seed 100, but the config says 5"):
        _train_config(["train", "rl", "--panel", "tiny-sokoban", "--set", "rollout.seed=5"])
    with pytest.raises(ValueError, match="has env 'ARLArena/Sokoban-v0'"):
        _train_config(["train", "rl", "--panel", "tiny-sokoban", "--env", "math"])


def test_a_run_folder_keeps_its_panels(tmp_path):
    from arlarena_baselines.cli.train import record_panels

    panels = {"train": {"name": "p", "hash": "h", "tasks": 3, "matches": True}}
    record_panels(tmp_path, "rl", panels, resume=False)
    assert json.loads((tmp_path / "rl_panels.json").read_text()) == panels
    (tmp_path / "rl_config.yaml").write_text("{}")  # the run has started
    record_panels(tmp_path, "rl", panels, resume=True)
    with pytest.raises(ValueError, match="was started on the task panels"):
        record_panels(tmp_path, "rl", {"train": {**panels["train"], "hash": "g"}}, resume=True)


def test_the_openrlhf_task_writer_takes_a_panel(data, capsys):
    from arlarena_baselines.openrlhf.launch import panel_tasks

    seeds, options, record = panel_tasks("tiny-sokoban", "sokoban", 5)
    assert seeds == [100, 101, 102, 100, 101] and options == {"split": "train"}
    assert record["hash"] == load_panel("tiny-sokoban").hash and record["tasks"] == 3
    with pytest.raises(PanelError, match="is on ARLArena/Sokoban-v0, not ARLArena/ALFWorld-v0"):
        panel_tasks("tiny-sokoban", "alfworld", 2)


def test_data_overlap_counts_shared_tasks(data, capsys):
    build_panel("tiny-later")
    assert main(["data", "overlap", "tiny-sokoban", "tiny-later"]) == 0
    out = capsys.readouterr().out
    assert "tiny-sokoban: 3 tasks, 3 distinct" in out
    assert "2 of tiny-sokoban's 3 tasks are also tasks of tiny-later" in out


def test_data_list_and_check(data, capsys):
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert load_panel("tiny-sokoban").hash in out and "not built" in out
    assert main(["data", "check", "tiny-sokoban"]) == 0
    assert "all 3 tasks match" in capsys.readouterr().err


@pytest.mark.parametrize("family", ["sokoban", "tir_math", "webshop", "alfworld"])
def test_the_shipped_panels_still_match_the_envs(family, tmp_path, monkeypatch):
    """Fails when an env generator or a dependency changed the tasks: rebuild the panels
    (``arlarena data build``) if the change is meant."""
    monkeypatch.setenv("ARLARENA_CACHE", str(tmp_path))
    import arlarena_envs  # noqa: F401
    from arlarena_envs.alfworld import native

    specs = [s for s in panel_specs().values() if s.family == family]
    assert specs
    # ALFWorld's panels reset 4,323 tasks on about 2,100 games (the held-out panels play each
    # game four times, the RL panel is the first 1,024 of BC's): the engine's compiled games,
    # cached by file content, are kept for the whole check (~0.8 GB, dropped after), so a
    # repeated game is compiled once, as a run's 16 most recent are. Every task is still reset
    # and hashed from its files and observation. ~25 s instead of ~55 s.
    monkeypatch.setattr(native, "_GAMES", type(native._GAMES)())
    monkeypatch.setattr(native, "load_game", partial(
        native.load_game, max_cached=sum(s.count for s in specs)))
    for spec in specs:  # every task of every panel: ~35 s for all four families on one core
        check = check_panel(load_panel(spec.name))
        assert check.ok and check.count == spec.count > 1, check.message()


def test_the_demo_runs_built_panels_with_registered_agents():
    import wrappers.agents
    from arlarena_baselines.cli.demo import DEMO_RUNS

    families = set()
    for demo in DEMO_RUNS:
        panel = load_panel(demo.panel)
        assert demo.episodes <= panel.spec.count
        assert set(demo.agents) <= set(wrappers.agents.AGENTS)
        families.add(panel.spec.family)
    assert families == {"sokoban", "webshop", "tir_math", "alfworld"}  # every env of the suite
