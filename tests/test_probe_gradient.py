"""scripts/probe_gradient.py on a real tiny model and real Sokoban rollouts: the return splits
into its success and format parts, their batch gradients add up to the method's (group-mean
advantages are linear in the return), and the script writes each part's cosines."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import pytest
import torch

from arlarena_baselines.trainer.config import load_config
from arlarena_baselines.trainer.rl import RLTrainer

_SPEC = importlib.util.spec_from_file_location(
    "probe_gradient", Path(__file__).resolve().parents[1] / "scripts" / "probe_gradient.py")
probe_gradient = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(probe_gradient)

SETTINGS = ["model.name=tiny", "model.hidden_size=32", "model.num_layers=1", "model.num_heads=2",
            "model.intermediate_size=64", "rollout.env=sokoban",
            "rollout.template=sokoban_compact", "rollout.history_length=0",
            "rollout.max_turns=4", "rollout.max_new_tokens=12", "rollout.n_groups=2",
            "rollout.group_size=4", "rl.method=GRPO", "rl.method_overrides.norm_by_std=false",
            "run.progress=false", "run.tensorboard=false"]
# Both advantages linear in the rewards: GRPO's group means, GiGPO's episode and step groups.
LINEAR = {"GRPO": [], "GiGPO": ["rl.method=GiGPO", "rl.method_overrides={gigpo_mode: mean_norm}"]}


@pytest.fixture(scope="module", params=sorted(LINEAR))
def trainer(request, module_tmp):
    config = load_config(None, [*SETTINGS, *LINEAR[request.param],
                                f"run.out={module_tmp('run')}"])
    trainer = RLTrainer(config)
    yield trainer
    trainer.close()


@pytest.fixture(scope="module")
def batch(trainer):
    """Real rollout turns of an untrained model, whose returns are all alike (every response
    malformed, no level solved); each trajectory is then given its own valid turns and a
    return made of them (-0.1 per invalid turn) plus a win for one rollout of each group, so
    that both parts' advantages vary."""
    samples = trainer.rollout(0, 0).samples
    trajs = sorted({s.traj_id for s in samples})
    turns: dict[str, list] = {t: sorted((s for s in samples if s.traj_id == t),
                                        key=lambda s: s.step) for t in trajs}
    varied = []
    for j, traj in enumerate(trajs):
        n, won = len(turns[traj]), traj.endswith("/0")
        valid = [k < j % n for k in range(n)]
        rewards = [10.0 * (won and k == n - 1) - 0.1 * (not v) for k, v in enumerate(valid)]
        varied += [dataclasses.replace(s, valid=v, reward=r, episode_score=sum(rewards))
                   for s, v, r in zip(turns[traj], valid, rewards, strict=True)]
    return varied


def test_the_return_splits_into_success_and_format(batch):
    parts = probe_gradient.with_scores(batch, penalty=0.1)
    columns = (parts["method"], parts["success"], parts["format"], batch)
    for m, s, f, original in zip(*columns, strict=True):
        assert m.episode_score == original.episode_score
        assert s.episode_score + f.episode_score == pytest.approx(m.episode_score)
        assert s.reward + f.reward == pytest.approx(m.reward)
        assert f.episode_score <= 0 and f.reward == (0 if original.valid else -0.1)
    # the format part is the trajectory's own invalid turns, whatever turn the sample is
    by_traj = {}
    for sample, f in zip(batch, parts["format"], strict=True):
        by_traj.setdefault(sample.traj_id, set()).add(round(f.episode_score, 9))
    assert all(len(scores) == 1 for scores in by_traj.values())


def test_the_parts_gradients_add_up_to_the_methods(trainer, batch):
    parts = probe_gradient.with_scores(batch, trainer.config.rollout.format_penalty)
    g = {part: probe_gradient.batch_gradient(trainer, samples) for part, samples in parts.items()}
    assert g["method"].norm() > 0 and g["format"].norm() > 0
    # float32 backward passes, summed in float64: equal to float32 rounding of the whole vector
    assert (g["success"] + g["format"] - g["method"]).norm() < 1e-5 * g["method"].norm()
    # the same batch twice: the same gradient (nothing is stepped in between)
    assert torch.equal(probe_gradient.batch_gradient(trainer, parts["method"]), g["method"])


def test_the_script_writes_each_parts_cosines(tmp_path, monkeypatch):
    out = tmp_path / "probe.json"
    argv = ["probe_gradient.py", "--config", "", "--model", "tiny", "--batches", "3",
            "--json", str(out), "--mix", "3", *[arg for s in SETTINGS[1:] for arg in ("--set", s)]]
    monkeypatch.setattr(sys, "argv", argv)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    probe_gradient.main()
    assert not any(scratch.iterdir())  # the trainer's run folder is gone with the script
    result = json.loads(out.read_text())
    assert result["batches"] == 3 and result["episodes"] == 8
    for part in probe_gradient.PARTS:
        pairs = result["results"][part]["pairs"]
        assert len(pairs) == 3 and all(-1 <= c <= 1 for c in pairs)
        assert result["results"][part]["cos"] == pytest.approx(sum(pairs) / 3)
    assert result["results"]["method"]["cos_with_method"] == 1.0
    # w = 1 is the method itself; w = 3 a row of its own
    assert set(result["results"]) == {*probe_gradient.PARTS, "success + 3 x format"}
