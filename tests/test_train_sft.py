"""Behaviour cloning: demonstrations are filtered by score, the loss covers responses only,
expert Sokoban turns are learnt, and a resumed run repeats the uninterrupted one."""

from __future__ import annotations

import json
import shutil
from itertools import pairwise

import pytest
import torch
from PIL import Image

from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.cli import main
from arlarena_baselines.evaluation import EvalConfig, evaluate
from arlarena_baselines.rollout import pack_pairs, response_log_probs
from arlarena_baselines.rollout.envs import EnvFactory
from arlarena_baselines.trainer.checkpoint import atomic_write_text
from arlarena_baselines.trainer.config import load_config
from arlarena_baselines.trainer.sft import SFTTrainer, load_demonstrations, train_sft
from arlarena_baselines.trainer.tracking import read_metrics
from wrappers.agents import make_agent

SOKOBAN = [
    "model.name=tiny", "rollout.env=sokoban", "rollout.template=sokoban_compact",
    "rollout.history_length=0", "rollout.max_turns=6", "rollout.max_new_tokens=32",
    "sft.agent=expert", "sft.episodes=5", "sft.epochs=3", "sft.batch_size=8", "sft.lr=1e-2",
    "sft.warmup_ratio=0", "eval.episodes=2", "eval.every=0", "eval.at_start=false",
    "run.threads=1", "run.progress=false", "run.tensorboard=false", "run.checkpoint_every=1",
    "run.keep_checkpoints=10",
]


pytestmark = pytest.mark.usefixtures("isolated_cache")


def test_demonstrations_keep_valid_turns_of_good_episodes(tmp_path):
    records = [
        {"type": "turn", "episode_id": "a", "prompt": "p1", "response": "r1", "format_ok": True},
        {"type": "turn", "episode_id": "a", "prompt": "p2", "response": "bad", "format_ok": False},
        {"type": "turn", "episode_id": "b", "prompt": "p3", "response": "r3", "format_ok": True},
        {"type": "turn", "episode_id": "c", "prompt": "p4", "response": "r4"},
        {"type": "episode", "episode_id": "a", "score": 1.0},
        {"type": "episode", "episode_id": "b", "score": 0.2},
        {"type": "episode", "episode_id": "c", "won": True},
    ]
    assert load_demonstrations(records, 1.0) == [("p1", "r1"), ("p4", "r4")]
    assert len(load_demonstrations(records, 0.0)) == 3


def test_reads_what_arlarena_eval_writes(tmp_path):
    path = tmp_path / "eval.jsonl"
    evaluate(EvalConfig(EnvFactory("ARLArena/Bandit-v0"), episodes=3), make_agent("expert"), path,
             progress=False)
    pairs = load_demonstrations(path, 1.0)
    assert len(pairs) == 3 and all(r.endswith("<action>blue</action>") for _, r in pairs)


def test_expert_sokoban_is_cloned_with_a_response_only_loss(tmp_path):
    config = load_config(None, [*SOKOBAN, f"run.out={tmp_path / 'run'}"])
    trainer = SFTTrainer(config)
    try:
        collected = [json.loads(line) for line in
                     (tmp_path / "run" / "demonstrations.jsonl").read_text().splitlines()]
        won = {r["episode_id"] for r in collected if r["type"] == "episode" and r["won"]}
        assert len(won) >= 4  # the rest need more than the 6 turns allowed
        kept = [r for r in collected if r["type"] == "turn" and r["episode_id"] in won]
        assert len(trainer.pairs) == len(kept)
        # The first step's loss is the mean NLL of the response tokens, prompts excluded.
        index = trainer.batch(0)
        prompts = [trainer.examples[i][0] for i in index]
        responses = [trainer.examples[i][1] for i in index]
        batch = pack_pairs(prompts, responses, trainer.policy.pad_id)
        with torch.no_grad():
            log_prob, _ = response_log_probs(trainer.policy.model, batch)
        expected = float(-(log_prob * batch.response_mask).sum() / batch.response_mask.sum())
        first = trainer.train_step(0)
        trainer.step = 1
        assert first[mn.SFT_LOSS] == pytest.approx(expected, rel=1e-4)
        records = trainer.train()
    finally:
        trainer.close()
    losses = [r[mn.SFT_LOSS] for r in records]
    assert losses[-1] < 0.8 * first[mn.SFT_LOSS]
    assert records[-1]["eval/episodes"] == 2.0
    assert (tmp_path / "run" / "final" / "tokenizer.json").is_file()


def test_resumed_sft_repeats_the_uninterrupted_run(tmp_path):
    full = tmp_path / "full"
    train_sft(load_config(None, [*SOKOBAN, "sft.epochs=2", f"run.out={full}"]))
    records = read_metrics(full)
    steps = [r["step"] for r in records]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) >= 3
    # A crash after step 1: the latest checkpoint is step 1, later metrics are to be redone.
    cut = tmp_path / "cut"
    shutil.copytree(full, cut)
    shutil.rmtree(cut / "final")
    atomic_write_text(cut / "checkpoints" / "latest", "step_000001\n")
    train_sft(load_config(None, [*SOKOBAN, "sft.epochs=2", f"run.out={cut}"]), resume=True)
    again = read_metrics(cut)
    assert [r["step"] for r in again] == steps
    for a, b in zip(records, again, strict=True):
        assert {k: v for k, v in a.items() if not k.startswith(mn.MACHINE_PREFIXES)} == {
            k: v for k, v in b.items() if not k.startswith(mn.MACHINE_PREFIXES)}
    assert main(["plot", str(cut)]) == 0
    with Image.open(cut / "plots" / "sft_curves.png") as image:
        assert image.size[0] > 400


def test_responses_can_be_rewritten_from_their_actions(tmp_path):
    path = tmp_path / "eval.jsonl"
    evaluate(EvalConfig(EnvFactory("ARLArena/Bandit-v0"), episodes=2), make_agent("expert"), path,
             progress=False)
    config = load_config(None, [
        "model.name=tiny", "rollout.env=ARLArena/Bandit-v0", f"sft.data={path}",
        "sft.response_template=<think>{action}</think><action>{action}</action>",
        "run.progress=false", "run.tensorboard=false", f"run.out={tmp_path / 'run'}",
    ])
    trainer = SFTTrainer(config)
    trainer.close()
    assert [r for _, r in trainer.pairs] == ["<think>blue</think><action>blue</action>"] * 2


@pytest.mark.parametrize("plan_labels", [False, True])
def test_plan_labels_clone_a_noisy_experts_plan_not_its_random_moves(tmp_path, plan_labels):
    path = tmp_path / "eval.jsonl"
    evaluate(EvalConfig(EnvFactory("ARLArena/Bandit-v0"), episodes=12),
             make_agent("expert", epsilon=1.0), path, progress=False)
    taken = [r["parsed_action"] for r in map(json.loads, path.read_text().splitlines())
             if r.get("type") == "turn"]
    assert "blue" in taken and set(taken) - {"blue"}  # the noise both hit and missed the plan
    config = load_config(None, [
        "model.name=tiny", "rollout.env=ARLArena/Bandit-v0", f"sft.data={path}",
        "sft.min_score=0", f"sft.plan_labels={str(plan_labels).lower()}",
        "sft.response_template=<action>{action}</action>",
        "run.progress=false", "run.tensorboard=false", f"run.out={tmp_path / 'run'}",
    ])
    trainer = SFTTrainer(config)
    trainer.close()
    cloned = [r for _, r in trainer.pairs]
    assert cloned == (["<action>blue</action>"] * 12 if plan_labels
                      else [f"<action>{a}</action>" for a in taken])


def test_a_noisy_experts_rejected_moves_show_the_envs_reply_and_clone_as_its_plan(tmp_path):
    compact = "ARLArena/ALFWorld-Compact-v0"
    factory = EnvFactory(compact, {"cache_dir": str(tmp_path / "games")}, history_length=0,
                         template="alfworld_compact")
    path = tmp_path / "eval.jsonl"
    evaluate(EvalConfig(factory, episodes=4), make_agent("expert", invalid=0.5, seed=3), path,
             progress=False)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[0]["agent"]["invalid"] == 0.5  # in the results' settings, so in their digest
    assert "invalid" not in make_agent("expert", epsilon=0.3).settings()  # older digests hold
    turns = [r for r in records if r.get("type") == "turn"]
    episodes: dict[str, list[dict]] = {}
    for turn in turns:
        episodes.setdefault(turn["episode_id"], []).append(turn)
    rejected = 0
    for steps in episodes.values():
        steps.sort(key=lambda t: t["step"])
        for turn, after in pairwise(steps):
            listed = after["prompt"].partition("Admissible actions: [")[2]
            if turn["format_ok"]:
                assert "Observation: Nothing happens." not in after["prompt"]
                continue
            rejected += 1
            assert turn["parsed_action"] not in listed  # shaped like a move, yet not listed
            assert "Observation: Nothing happens." in after["prompt"]
    assert 0.25 * len(turns) < rejected < 0.75 * len(turns)
    config = load_config(None, [
        "model.name=tiny", f"rollout.env={compact}", f"sft.data={path}", "sft.min_score=0",
        "sft.plan_labels=true", "sft.response_template=<action>{action}</action>",
        "run.progress=false", "run.tensorboard=false", f"run.out={tmp_path / 'run'}",
    ])
    trainer = SFTTrainer(config)
    trainer.close()
    assert len(trainer.pairs) == len(turns) - rejected  # a rejected move is not cloned ...
    recoveries = [p for p, _ in trainer.pairs if "Observation: Nothing happens." in p]
    assert len(recoveries) >= rejected // 2  # ... the move after it is
    for prompt, response in trainer.pairs:  # every label is a listed move: the plan's
        action = response.removeprefix("<action>").removesuffix("</action>")
        assert f"{action}," in prompt or f"{action}]" in prompt
