"""A CLI that shows its choices: --help lists every fixed set of values, and an unknown value
or config key is rejected with the known ones and the nearest."""

from __future__ import annotations

import subprocess
import sys

import pytest

from arlarena_baselines.cli import build_parser, main


def _help(*command: str) -> str:
    parser = build_parser()
    for name in command:
        parser = next(a for a in parser._actions if a.dest in ("command", "phase")).choices[name]
    return parser.format_help()


def _fails(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    return capsys.readouterr().err


def test_train_rl_help_lists_every_method_on_a_line_of_its_own():
    from arlarena_baselines.algos import METHODS

    lines = [line.strip() for line in _help("train", "rl").splitlines()]
    for name, method in METHODS.items():
        assert f"{name}{' ' * (12 - len(name))}{method.summary}" in lines
    assert len(METHODS) == 13


def test_every_fixed_set_is_listed_in_the_help():
    from arlarena_baselines.rollout import BACKENDS
    from arlarena_envs import ENV_SPECS
    from wrappers.agents import AGENTS
    from wrappers.templates import TEMPLATES

    evaluate = _help("eval")
    for name in [*ENV_SPECS, *AGENTS, "eval_out_of_distribution", "champ", "sokoban-eval"]:
        assert f"  {name} " in evaluate or f"{name}," in evaluate, name
    train = _help("train", "rl")
    for name in [*BACKENDS, *TEMPLATES, "sokoban_compact", "bfloat16"]:
        assert f"  {name}" in train, name


@pytest.mark.parametrize(("argv", "wanted"), [
    (["train", "rl", "--method", "SAMPOO"], "did you mean 'SAMPO'?"),
    (["train", "rl", "--rollout.backend", "vlm"], "did you mean 'vllm'?"),
    (["train", "rl", "--rollout.template", "sokoban_compat"], "did you mean 'sokoban_compact'?"),
    (["train", "sft", "--agent", "expret"], "did you mean 'expert'?"),
    (["eval", "--agent", "expert,randm"], "did you mean 'random'?"),
    (["eval", "--env", "sokobn"], "did you mean 'sokoban'?"),
    (["eval", "--panel", "sokoban-evl"], "did you mean 'sokoban-eval'?"),
])
def test_an_unknown_value_names_the_nearest_and_the_known(argv, wanted, capsys):
    err = _fails(argv, capsys)
    assert wanted in err and "known: " in err


@pytest.mark.parametrize(("item", "wanted"), [
    ("rl.lrr=1e-5", "unknown config key 'rl.lrr'; did you mean 'rl.lr'?"),
    ("rll.lr=1e-5", "unknown config section 'rll'; did you mean 'rl'?"),
    ("rl.method_overrides.kl_coeff=0.1", "did you mean 'kl_coef'?"),
    ("rl.method=SAMP", "rl.method: unknown method 'SAMP'; did you mean 'SAMPO'?"),
    ("rollout.backend=vlm", "did you mean 'vllm'?"),
])
def test_set_keys_and_values_are_checked(item, wanted, capsys):
    assert main(["train", "rl", "--set", item]) == 2
    assert wanted in capsys.readouterr().err


def test_config_file_keys_are_checked(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("rollout:\n  group_sise: 4\n")
    assert main(["train", "rl", "--config", str(config)]) == 2
    assert "did you mean 'rollout.group_size'?" in capsys.readouterr().err


def test_known_values_pass_in_any_case():
    from arlarena_baselines.cli.train import build_config

    args = build_parser().parse_args(["train", "rl", "--method", "gigpo", "--set",
                                      "rollout.template=sokoban_compact"])
    config = build_config(args, "rl")
    assert (config.rl.method, config.rollout.template) == ("GiGPO", "sokoban_compact")


@pytest.mark.parametrize(("argv", "wanted"), [
    (["--env", "webshop", "--split", "evl"], "unknown split 'evl' of ARLArena/WebShop-v0; did "
     "you mean 'eval'?"),
    (["--env", "math", "--split", "champs"], "did you mean 'champ'?"),
    (["--env", "sokoban", "--split", "held"], "unknown split 'held' of ARLArena/Sokoban-v0"),
    (["--env", "ARLArena/Bandit-v0", "--split", "train"], "ARLArena/Bandit-v0 has no splits"),
])
def test_splits_are_checked_against_the_env(argv, wanted, capsys, tmp_path):
    assert main(["eval", *argv, "--episodes", "1", "--out", str(tmp_path)]) == 2
    assert wanted in capsys.readouterr().err


def test_building_the_parser_imports_no_torch():
    code = ("import sys; from arlarena_baselines.cli import build_parser; build_parser(); "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
