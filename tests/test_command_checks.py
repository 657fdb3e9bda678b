"""What a new user meets first: every command checks its arguments against the config's own
bounds with a one-line error before any work, a dry run runs the real run's checks, the split
an evaluation plays is stated, ``report --compare`` will not mix task sets, progress shows on
every long phase, and actions outside the action space get one documented response on every
env."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import arlarena_envs
from arlarena_baselines.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _one_line_error(capsys, *fragments: str) -> None:
    """stderr holds one error line (after at most the line saying which tasks would run)."""
    err = capsys.readouterr().err.strip()
    lines = [line for line in err.splitlines() if not line.startswith("tasks: ")]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in lines[0], err


@pytest.mark.parametrize(("flags", "message"), [
    (["--rollout.group_size", "0"], "rollout.group_size must be >= 1, got 0"),
    (["--steps", "-1"], "rl.steps must be >= 1, got -1"),
    (["--steps", "0"], "rl.steps must be >= 1, got 0"),
    (["--rollout.max_turns", "0"], "rollout.max_turns must be >= 1 or null, got 0"),
    (["--rollout.max_new_tokens", "0"], "rollout.max_new_tokens must be >= 1 or null, got 0"),
    (["--eval.episodes", "-3"], "eval.episodes must be >= 0, got -3"),
])
def test_train_rl_refuses_out_of_bounds_arguments(flags, message, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "rl", "--env", "ARLArena/Bandit-v0", "--model", "tiny", "--out",
                 str(out), *flags]) == 2
    _one_line_error(capsys, message)
    assert not out.exists()  # refused before any work


@pytest.mark.parametrize(("flags", "message"), [
    (["--episodes", "0"], "episodes must be >= 1, got 0"),
    (["--episodes", "-5"], "episodes must be >= 1, got -5"),
    (["--samples", "0"], "samples must be >= 1, got 0"),
    (["--seed", "-1"], "seed must be >= 0, got -1"),
    (["--env-kwargs", '{"no_such_key": 1}'], "takes no env kwarg no_such_key"),
])
def test_eval_refuses_out_of_bounds_arguments(flags, message, tmp_path, capsys):
    assert main(["eval", "--agent", "random", "--out", str(tmp_path / "res"), "--no-progress",
                 *flags]) == 2
    _one_line_error(capsys, message)
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize(("flags", "message"), [
    (["--steps", "0"], "--steps must be >= 1, got 0"),
    (["--steps", "-5"], "--steps must be >= 1, got -5"),
    (["--nodes", "0"], "--nodes must be >= 1, got 0"),
    (["--chat-template-kwargs", "[1]"], "--chat-template-kwargs must be a JSON object"),
    (["--panel", "webshop-small-train"], "is on ARLArena/WebShop-Small-v0, not "
                                          "ARLArena/Sokoban-v0"),
])
def test_openrlhf_dry_run_refuses_what_the_real_run_refuses(flags, message, tmp_path, capsys):
    pytest.importorskip("openrlhf")
    assert main(["train", "openrlhf", "sokoban", "GRPO", "--dry-run", "--out",
                 str(tmp_path / "run"), *flags]) == 2
    _one_line_error(capsys, message)
    assert capsys.readouterr().out == ""


def test_eval_states_the_split_it_plays(tmp_path, capsys):
    assert main(["eval", "--agent", "random", "--env", "ARLArena/WebShop-Small-v0",
                 "--episodes", "1", "--out", str(tmp_path), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert ("tasks: ARLArena/WebShop-Small-v0, the env's default tasks: its training split "
            "(held out: {'split': 'eval'}), seeds 0..0") in err
    assert main(["eval", "--agent", "random", "--env", "sokoban", "--split", "eval",
                 "--episodes", "2", "--seed", "7", "--out", str(tmp_path / "b"),
                 "--no-progress"]) == 0
    assert "tasks: ARLArena/Sokoban-v0, reset options {'split': 'eval'}, seeds 7..8" in (
        capsys.readouterr().err)


def test_compare_refuses_mixed_splits_and_seed_ranges_without_a_panel(tmp_path, capsys):
    runs = {"train": ["--split", "train"], "eval": ["--split", "eval"],
            "later": ["--split", "train", "--seed", "10"]}
    files = {}
    for name, flags in runs.items():
        out = tmp_path / name
        assert main(["eval", "--agent", "random", "--env", "sokoban", "--episodes", "2",
                     "--out", str(out), "--no-progress", *flags]) == 0
        files[name] = f"{name}={next(out.glob('*.jsonl'))}"
    for other in ("eval", "later"):
        capsys.readouterr()
        assert main(["report", "--compare", files["train"], files[other]]) == 2
        err = capsys.readouterr().err
        assert "ran on different tasks" in err and "--mixed-panels" in err
    assert '{"split": "eval"}, seeds 0..1' in err or '{"split": "train"}, seeds 10..11' in err
    assert main(["report", "--compare", "--mixed-panels", files["train"], files["eval"]]) == 0


def test_the_start_evaluation_shows_progress(tmp_path, capsys):
    assert main(["train", "rl", "--env", "ARLArena/Bandit-v0", "--model", "tiny", "--steps",
                 "1", "--out", str(tmp_path / "run"), "--threads", "1", "--set",
                 "rollout.n_groups=1", "--set", "rollout.group_size=2", "--set",
                 "rollout.max_new_tokens=4", "--set", "eval.episodes=2", "--set",
                 "run.tensorboard=false", "--set", "run.progress=true"]) == 0
    err = capsys.readouterr().err
    start = err.index("held-out eval of rl@0")  # before the first training step
    assert start < err.index("RL ") and "0/2 [" in err[start:]


ENV_IDS = ["ARLArena/Sokoban-v0", "ARLArena/Bandit-v0", "ARLArena/WebShop-Small-v0",
           "ARLArena/TIRMath-v0", "ARLArena/ALFWorld-v0"]


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("action", [b"up", b"blue", 681198, None, 3.5],
                         ids=["bytes-up", "bytes-blue", "int", "none", "float"])
def test_actions_outside_the_space_are_invalid_turns(env_id, action):
    """Not a str: the env's invalid turn (what it does with the empty action), never the text
    the value prints as (``b"up"`` moved in Sokoban, ``b"blue"`` won the bandit, the int
    answer scored 1.0 in TIR Math)."""
    kwargs = {"dataset": "arithmetic"} if "TIRMath" in env_id else {}
    pair = [gym.make(env_id, **kwargs).unwrapped for _ in range(2)]
    try:
        if "TIRMath" in env_id:  # a problem whose answer is the int, as the issue found
            options = {"index": 0}
            answer = pair[0].reset(seed=0, options=options)[1]["reference"]
            action = int(answer) if isinstance(action, int) and answer.lstrip("-").isdigit() \
                else action
        else:
            options = None
        results = []
        for env, act in zip(pair, (action, ""), strict=True):
            env.reset(seed=3, options=options)
            obs, reward, terminated, truncated, info = env.step(act)
            results.append((obs, reward, terminated, truncated, info["action_is_valid"],
                            info["won"]))
        assert results[0] == results[1]
        assert results[0][4] is False and results[0][5] is False
    finally:
        for env in pair:
            env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_stepping_after_the_end_is_the_same_on_every_env(env_id):
    """Any action after the env ended the episode: the last observation again, reward 0, the
    same flags, an invalid action (Sokoban charged -0.1, the bandit raised)."""
    env = gym.make(env_id).unwrapped
    try:
        obs, info = env.reset(seed=1)
        for _ in range(60):
            action = env.expert_action() or (info["admissible_actions"] or ["\\boxed{0}"])[0]
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        assert terminated or truncated
        for stepped in (env, copy.deepcopy(env)):  # a copy of a finished episode too
            for action in ("up", "blue", "", b"x", 7):
                again = stepped.step(action)
                assert again[:4] == (obs, 0.0, terminated, truncated)
                assert again[4]["action_is_valid"] is False and again[4]["won"] == info["won"]
    finally:
        env.close()


def test_env_specific_agents_refuse_other_envs(tmp_path, capsys):
    for agent, env in (("webshop-heuristic", "sokoban"), ("math-coder", "ARLArena/Bandit-v0")):
        assert main(["eval", "--agent", agent, "--env", env, "--episodes", "1", "--out",
                     str(tmp_path / agent), "--no-progress"]) == 2
        _one_line_error(capsys, f"agent {agent} plays only", arlarena_envs.resolve_env_id(env))
    assert main(["eval", "--agent", "math-coder", "--env", "math", "--split", "arithmetic",
                 "--episodes", "1", "--out", str(tmp_path / "ok"), "--no-progress"]) == 0


def test_the_visual_env_refuses_a_text_only_model(tmp_path, capsys):
    from arlarena_baselines.trainer.config import ModelConfig
    from arlarena_baselines.trainer.models import load_policy

    model, tokenizer = load_policy(ModelConfig(name="tiny"))
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    capsys.readouterr()
    assert main(["eval", "--agent", "hf", "--model", str(tmp_path / "m"), "--env",
                 "ARLArena/Sokoban-Visual-v0", "--episodes", "1", "--out", str(tmp_path / "r"),
                 "--no-progress"]) == 2
    _one_line_error(capsys, "shows its state as an image", "never sees")
    assert not (tmp_path / "r").exists()
    assert main(["train", "rl", "--env", "ARLArena/Sokoban-Visual-v0", "--model", "tiny",
                 "--out", str(tmp_path / "run"), "--threads", "1"]) == 2
    _one_line_error(capsys, "shows its state as an image")
    assert main(["eval", "--agent", "random", "--env", "ARLArena/Sokoban-Visual-v0",
                 "--episodes", "1", "--out", str(tmp_path / "random"), "--no-progress"]) == 0


def test_trl_script_refuses_a_method_trl_cannot_express_before_building_a_model(tmp_path):
    pytest.importorskip("trl")
    for method, hint in (("GiGPO", "cannot express GiGPO"), ("GSPO", "or pass --near")):
        done = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "trl_grpo.py"), "--method", method,
             "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert hint in done.stderr and "near=True" not in done.stderr
        assert not any(tmp_path.iterdir())  # no model was built


def test_resume_refuses_a_changed_scorer(tmp_path, monkeypatch, capsys):
    """A results file continued under another scorer would mix the two silently."""
    monkeypatch.chdir(tmp_path)
    args = ["eval", "--agent", "random", "--env", "ARLArena/WebShop-Small-v0", "--episodes",
            "1", "--out", "res", "--no-progress"]
    monkeypatch.delenv("ARLARENA_WEBSHOP_DATA", raising=False)
    assert main(args) == 0
    (tmp_path / "data").mkdir()
    products = [{"asin": f"B0{i:08d}", "category": "beauty", "query": "soap",
                 "name": f"Soap {i}", "pricing": "$3.00",
                 "customization_options": {"Size": [{"value": "small"}, {"value": "big"}]}}
                for i in range(20)]
    (tmp_path / "data" / "items_shuffle_1000.json").write_text(json.dumps(products))
    (tmp_path / "data" / "items_ins_v2_1000.json").write_text("{}")
    monkeypatch.setenv("ARLARENA_WEBSHOP_DATA", str(tmp_path / "data"))
    capsys.readouterr()
    assert main([*args, "--resume", "--episodes", "2"]) == 2
    assert "scorer.data" in capsys.readouterr().err
