"""The trainer's configuration: YAML, overrides, the CLI's precedence, the per-method files."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from arlarena_baselines.algos import METHODS, get_method, study_method
from arlarena_baselines.cli.train import build_config, register
from arlarena_baselines.trainer.config import (
    TrainConfig,
    apply_overrides,
    config_from_dict,
    config_to_dict,
    load_config,
    method_config_yaml,
)

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


@pytest.mark.parametrize("env", [None, "webshop"])
@pytest.mark.parametrize("name", list(METHODS))
def test_every_method_has_a_config_file_in_sync(name, env):
    path = CONFIGS / "rl" / (env or "") / f"{name}.yaml"
    assert path.is_file(), f"missing {path}: run `arlarena train write-configs`"
    assert path.read_text() == method_config_yaml(name, env)
    config = load_config(path)
    assert config.rl.method == name
    method = get_method(name).with_overrides(**config.rl.method_overrides)
    assert method == study_method(name, env)  # the file spells out the study's values


def test_recipe_configs_load():
    for path in sorted((CONFIGS / "recipe").glob("*.yaml")):
        load_config(path)


def test_yaml_then_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("rl:\n  lr: 1.0e-5\n  method: gigpo\nrollout:\n  n_groups: 4\n")
    config = load_config(path, ["rl.lr=2e-6", "rollout.env_kwargs={dim: [6, 6]}"])
    assert config.rl.lr == 2e-6 and config.rl.method == "gigpo"
    assert config.rollout.n_groups == 4 and config.rollout.env_kwargs == {"dim": [6, 6]}
    assert config.model == TrainConfig().model


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("rl.lrr=1", "unknown field rl.lrr"),
        ("optim.lr=1", "unknown config section 'optim'"),
        ("rl.steps=ten", "cannot use 'ten'"),
        ("rl.steps=1.5", "cannot use 1.5"),
        ("run.tensorboard=maybe", "cannot use 'maybe'"),
        ("rl.lr", "section.field=value"),
    ],
)
def test_bad_overrides_name_the_problem(override, message):
    with pytest.raises(ValueError, match=message):
        apply_overrides(TrainConfig(), [override])


def test_round_trip_through_plain_dicts():
    config = apply_overrides(TrainConfig(), ["rl.betas=[0.8, 0.9]", "rollout.max_turns=7"])
    again = config_from_dict(config_to_dict(config))
    assert again == config and again.rl.betas == (0.8, 0.9)


def _parse(argv):
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_cli_precedence_file_then_shortcuts_then_fields_then_set(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("rl:\n  method: GRPO\n  steps: 5\nrun:\n  seed: 3\n")
    args = _parse([
        "train", "rl", "--config", str(path), "--method", "SAMPO", "--rl.steps", "7",
        "--steps", "6", "--set", "rl.steps=8", "--rollout.n_groups", "2",
    ])
    config = build_config(args, "rl")
    assert (config.rl.method, config.rl.steps, config.run.seed) == ("SAMPO", 8, 3)
    assert config.rollout.n_groups == 2
    assert config.run.out == "runs/rl-sokoban-SAMPO"


def test_cli_default_run_folder_names_phase_env_and_method():
    config = build_config(_parse(["train", "sft", "--agent", "random"]), "sft")
    assert config.run.out == "runs/sft-sokoban-random"
    assert build_config(_parse(["train", "rl", "--out", "x"]), "rl").run.out == "x"
