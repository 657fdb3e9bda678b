"""``scripts/openrlhf/train.sh --dry-run``: for every env × method, a ``ray job submit`` command
whose OpenRLHF part OpenRLHF 0.11.2's own parser and checks accept, with the study's settings.

The parser is run from OpenRLHF's installed ``train_ppo_ray`` source (``arlarena_baselines/
openrlhf/cli.py``), which needs neither Ray, DeepSpeed nor vLLM: nothing is stubbed here.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openrlhf")

from arlarena_baselines.algos import METHODS, get_method, study_method
from arlarena_baselines.cli import main
from arlarena_baselines.openrlhf import launch
from arlarena_baselines.openrlhf.cli import OpenRLHFArgumentError, parse_train_args
from arlarena_baselines.openrlhf.settings import task_from_label
from arlarena_envs.registration import ENV_SPECS, env_sampling, resolve_env_id

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "openrlhf" / "train.sh"


def dry_run(*argv: str) -> list[str]:
    """The command ``train.sh ... --dry-run`` prints, split as a shell would."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["train", "openrlhf", *argv[:2], "--dry-run", *argv[2:]]) == 0
    return shlex.split(out.getvalue())


def split(command: list[str]) -> tuple[dict, list[str]]:
    """(the job's runtime env, the arguments of ``python3 -m openrlhf.cli.train_ppo_ray``)."""
    assert command[:3] == ["ray", "job", "submit"]
    runtime_env = json.loads(command[command.index("--runtime-env-json") + 1])
    head = command.index("--")
    assert command[head + 1 : head + 4] == ["python3", "-m", "openrlhf.cli.train_ppo_ray"]
    return runtime_env, command[head + 4 :]


@pytest.mark.parametrize("env", sorted(launch.ENVS))
def test_every_method_gives_a_command_openrlhf_accepts(env, tmp_path):
    out = tmp_path / "run"
    for name in METHODS:
        runtime_env, argv = split(dry_run(env, name, "--out", str(out)))
        args = parse_train_args(argv)
        method = study_method(name, launch.ENVS[env].env)
        assert method == get_method(name).with_overrides(**launch.Launch(env, name).overrides)
        env_vars = runtime_env["env_vars"]

        assert runtime_env["worker_process_setup_hook"] == launch.SETUP_HOOK
        assert env_vars["ARLARENA_METHOD"] == method.name
        assert json.loads(env_vars.get("ARLARENA_METHOD_OVERRIDES", "{}")) == \
            launch.Launch(env, name).overrides
        assert env_vars["ARLARENA_ENV"] == launch.ENVS[env].env
        assert int(env_vars["ARLARENA_MAX_TURNS"]) == \
            ENV_SPECS[resolve_env_id(launch.ENVS[env].env)].max_episode_steps
        assert Path(args.train.agent_func_path) == launch.AGENT_FILE
        assert args.train.agent_func_path.endswith(".py") and launch.AGENT_FILE.exists()
        assert args.reward.remote_url == ["agent"] and args.critic.model_name_or_path is None
        # 16 groups × 8 rollouts, one update per rollout batch, lr 1e-6, T = 1.0
        assert (args.rollout.batch_size, args.rollout.n_samples_per_prompt) == (16, 8)
        assert args.train.batch_size == 128 and args.actor.adam.lr == 1e-6
        # evaluation as the study's scripts for the env (ALFWorld/WebShop: T 0.6, p 0.95,
        # k 20; Sokoban T 0.4; maths T 0.6, p 0.7)
        study = env_sampling(launch.ENVS[env].env)
        assert args.rollout.temperature == 1.0 and args.eval.temperature == study.temperature
        assert (float(env_vars["ARLARENA_EVAL_TOP_P"]), int(env_vars["ARLARENA_EVAL_TOP_K"])) \
            == (study.top_p, study.top_k)
        if env in ("alfworld", "webshop"):
            assert (study.temperature, study.top_p, study.top_k) == (0.6, 0.95, 20)
        assert int(env_vars["ARLARENA_STEPS"]) == launch.Launch.steps
        assert args.vllm.enable_prefix_caching
        # the method's own hyperparameters
        assert args.actor.eps_clip_low_high == [method.clip_low, method.clip_high]
        assert args.actor.dual_clip == method.dual_clip
        assert args.actor.policy_loss_type == ("gspo" if method.clipping == "gspo" else "ppo")
        assert args.actor.loss_agg_mode == method.aggregation
        assert args.algo.kl.use_loss and args.algo.kl.init_coef == method.kl_coef
        assert args.algo.kl.estimator == method.kl_estimator
        assert args.actor.entropy_coef == method.entropy_coef
        # the plug-in filters with the method's rule: OpenRLHF's filter stays off
        assert not args.algo.dynamic_filtering_enable
        assert args.data.max_len == launch.ENVS[env].max_len
        # no GPU holds the logits of more than 8K tokens of an episode
        assert args.ds.ring_attn_size == launch.ENVS[env].ring_attn_size
        assert args.data.max_len // args.ds.ring_attn_size <= 8192
        assert args.ds.packing_samples == (args.ds.ring_attn_size > 1)
        assert Path(args.ckpt.path).parent == out and Path(args.ckpt.output_dir).parent == out
    assert not out.exists()  # a dry run writes nothing


def test_webshop_uses_the_studys_webshop_settings():
    env_vars = split(dry_run("webshop", "sampo"))[0]["env_vars"]
    assert json.loads(env_vars["ARLARENA_METHOD_OVERRIDES"]) == \
        {"gigpo_mode": "mean_norm", "cold_start_steps": 5}
    assert "ARLARENA_METHOD_OVERRIDES" not in split(dry_run("alfworld", "sampo"))[0]["env_vars"]
    runtime_env, argv = split(dry_run("webshop-small", "GSPO"))
    assert json.loads(runtime_env["env_vars"]["ARLARENA_METHOD_OVERRIDES"]) == {
        "regularizer_aggregation": "seq-mean-token-mean", "clip_low": 0.03, "clip_high": 0.04}
    assert parse_train_args(argv).actor.eps_clip_low_high == [0.03, 0.04]


def test_the_entropy_flag_only_when_its_coefficient_is_not_zero(monkeypatch):
    # Any --actor.entropy_coef, 0 included, makes OpenRLHF build the full-vocabulary softmax.
    zero = get_method("GRPO").with_overrides(entropy_coef=0.0)
    monkeypatch.setattr(launch.Launch, "resolved", property(lambda self: zero))
    argv = launch.openrlhf_args(launch.Launch("sokoban", "GRPO"))
    assert "--actor.entropy_coef" not in argv
    assert parse_train_args(argv).actor.entropy_coef is None


def test_ring_attention_needs_a_multiple_of_its_size():
    with pytest.raises(ValueError, match="multiple"):
        launch.openrlhf_args(launch.Launch("alfworld", "GRPO", gpus_per_node=2))
    argv = launch.openrlhf_args(launch.Launch("alfworld", "GRPO", nodes=1, gpus_per_node=4))
    assert parse_train_args(argv).ds.ring_attn_size == 4


def test_cluster_shape_and_extra_flags_reach_openrlhf():
    _, argv = split(dry_run("alfworld", "GiGPO", "--nodes", "2", "--gpus-per-node", "4",
                            "--model", "/models/qwen", "--", "--vllm.enforce_eager"))
    args = parse_train_args(argv)
    assert (args.actor.num_nodes, args.actor.num_gpus_per_node) == (2, 4)
    assert args.vllm.num_engines == 8 and args.vllm.enforce_eager
    assert args.actor.model_name_or_path == "/models/qwen"
    with pytest.raises(OpenRLHFArgumentError):
        parse_train_args([*argv, "--no-such-flag"])


def test_a_dry_run_refuses_flags_openrlhf_refuses(capsys, tmp_path):
    """`--dry-run` checks the command as a launch does: OpenRLHF's parser sees the extra flags."""
    argv = ["train", "openrlhf", "sokoban", "GRPO", "--dry-run", "--out", str(tmp_path / "run")]
    assert main([*argv, "--", "--bogus.flag"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "--bogus.flag" in captured.err
    assert "error: OpenRLHF's parser rejected the command" in captured.err
    assert main([*argv, "--", "--vllm.enforce_eager"]) == 0
    assert "--vllm.enforce_eager" in shlex.split(capsys.readouterr().out)
    assert main(["eval", "--env", "sokoban", "--", "--vllm.enforce_eager"]) == 2
    assert "eval takes no arguments after `--`" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_arlarena_train_lists_openrlhf_and_its_help_shows_the_defaults(capsys):
    assert main(["train", "--help"]) == 0
    assert re.search(r"^\s+openrlhf\s+RL with a method of METHODS on a Ray cluster",
                     capsys.readouterr().out, re.MULTILINE)
    assert main(["train", "openrlhf", "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    for flag, default in (("--model MODEL", "Qwen/Qwen3-4B"), ("--nodes NODES", "1"),
                          ("--gpus-per-node GPUS_PER_NODE", "8"), ("--steps STEPS", "100")):
        assert re.search(f"{re.escape(flag)} .*?default: {re.escape(default)}\\b", shown), flag


def test_the_shell_script_prints_the_same_command():
    env = {**os.environ, "PYTHON": sys.executable}
    printed = subprocess.run([str(SCRIPT), "sokoban", "CISPO_SM", "--dry-run"], env=env,
                             capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert shlex.split(printed) == dry_run("sokoban", "CISPO_SM")
    bad = subprocess.run([str(SCRIPT), "chess", "GRPO", "--dry-run"], env=env,
                         capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_task_datasets(tmp_path):
    run = launch.Launch("webshop", "DAPO_GRPO", steps=3)
    assert run.train_tasks == 3 * 16 * 2  # the study's 2 rounds on WebShop: up to 2 × 16 tasks
    assert launch.Launch("alfworld", "DAPO_GRPO", steps=3).train_tasks == 3 * 16 * 3
    assert launch.Launch("webshop", "GRPO", steps=3).train_tasks == 3 * 16
    path = launch.write_tasks(tmp_path / "train.jsonl", "webshop", range(5, 9), {"split": "eval"})
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [task_from_label(r["label"]).seed for r in rows] == [5, 6, 7, 8]
    assert {task_from_label(r["label"]).options["split"] for r in rows} == {"eval"}
    assert len({r["prompt"] for r in rows}) == 4


def test_a_launch_writes_the_tasks_then_submits_the_printed_command(tmp_path, monkeypatch):
    submitted = []
    monkeypatch.setattr(launch.subprocess, "call", lambda command: submitted.append(command) or 0)
    argv = ["math", "DAPO_GiGPO", "--steps", "2", "--out", str(tmp_path)]
    assert main(["train", "openrlhf", *argv]) == 0
    assert submitted == [dry_run(*argv)]  # no cluster here: the submission is captured
    train = (tmp_path / "tasks" / "train.jsonl").read_text().splitlines()
    held_out = (tmp_path / "tasks" / "eval.jsonl").read_text().splitlines()
    assert len(train) == 2 * 16 * 3 and len(held_out) == 32
    first = task_from_label(json.loads(train[0])["label"])
    assert (first.seed, first.options) == (0, {"dataset": "train"})
    assert task_from_label(json.loads(held_out[0])["label"]).seed == 1_000_000
