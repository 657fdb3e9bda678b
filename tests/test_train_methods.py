"""Every method of METHODS trains: it learns a toy task, and logs the full diagnostics.

A tiny random Llama (SmolLM2 tokenizer) is first cloned on well-formed answers that pick each
arm of ``ARLArena/Bandit-v0`` equally often; only the ``blue`` answer in the strict format
pays (a malformed response loses the whole reward: ``format_penalty=1``). RL must then raise
the share of sampled responses that are exactly the rewarded answer.
"""

from __future__ import annotations

import json
import math

import pytest

from arlarena_baselines.algos import METHODS
from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.rollout import EnvFactory, HFBackend, SamplingParams, encode_prompt
from arlarena_baselines.trainer.config import load_config
from arlarena_baselines.trainer.rl import train_rl
from arlarena_baselines.trainer.sft import train_sft
from wrappers.format import parse_response

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("isolated_cache")]

ARMS = ("red", "green", "blue", "yellow")
BANDIT = "ARLArena/Bandit-v0"
COMMON = [
    f"rollout.env={BANDIT}",
    "rollout.max_new_tokens=16",
    "rollout.format_penalty=1.0",
    "run.threads=1",
    "run.tensorboard=false",
    "run.progress=false",
    "eval.episodes=0",
    "run.checkpoint_every=0",
]
# Every update must log these (``stability_metrics`` with π_ref and entropies, the loss parts).
DIAGNOSTICS = (
    mn.KL_OLD, mn.KL_REF, mn.STAB_CLIP_FRAC, mn.OOB_FRAC, mn.STAB_OOB_LOW_FRAC,
    mn.STAB_OOB_HIGH_FRAC, *mn.KL_REF_SHARE_KEYS, mn.SEQS_MASKED, mn.GROUPS_FILTERED,
    mn.VALID_FORMAT_RATIO, mn.SUCCESS_RATE, mn.GRAD_NORM, mn.PG_LOSS, mn.KL_LOSS, mn.ENTROPY,
    mn.TOTAL_LOSS, mn.CLIP_FRAC, mn.RATIO_MEAN,
)


@pytest.fixture(scope="module")
def warm(module_tmp):
    """The tiny model after behaviour cloning on one well-formed answer per arm."""
    root = module_tmp("warm")
    prompt, _ = EnvFactory(BANDIT)().reset(seed=0)
    records = []
    for k, arm in enumerate(ARMS):
        records.append({"type": "turn", "episode_id": str(k), "prompt": prompt,
                        "response": f"<think>ok</think><action>{arm}</action>"})
        records.append({"type": "episode", "episode_id": str(k), "score": 0.0})
    data = root / "demonstrations.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    config = load_config(None, [
        *COMMON, "model.name=tiny", f"sft.data={data}", "sft.min_score=0", "sft.epochs=100",
        "sft.batch_size=4", "sft.lr=1e-2", "sft.warmup_ratio=0", f"run.out={root / 'sft'}",
    ])
    train_sft(config)
    return root / "sft" / "final"


def rewarded_share(model_dir, samples: int = 64) -> float:
    """The share of responses sampled at T = 1 that are exactly the rewarded answer."""
    from transformers import AutoModelForCausalLM

    from arlarena_baselines.trainer.models import smollm2_tokenizer

    tokenizer = smollm2_tokenizer()
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    prompt, _ = EnvFactory(BANDIT)().reset(seed=0)
    outs = HFBackend(model, tokenizer).generate(
        [encode_prompt(tokenizer, prompt)] * samples, SamplingParams(max_new_tokens=16),
        list(range(123, 123 + samples)),
    )
    parsed = [parse_response(t, ARMS) for t in tokenizer.batch_decode(
        outs, skip_special_tokens=True)]
    return sum(p.format_ok and p.action == "blue" for p in parsed) / samples


@pytest.fixture(scope="module")
def warm_share(warm):
    share = rewarded_share(warm)
    assert 0.1 < share < 0.45  # cloned: well-formed, arms about uniform
    return share


def assert_full_diagnostics(records):
    updates = [r for r in records if r["step"] > 0 and mn.STEP_SKIPPED not in r]
    assert updates, "no step updated the policy"
    for record in updates:
        missing = [k for k in DIAGNOSTICS if k not in record]
        assert not missing, f"step {record['step']} lacks {missing}"
        assert all(record[k] is not None and math.isfinite(record[k]) for k in DIAGNOSTICS)


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_raises_the_rewarded_answer(method, warm, warm_share, tmp_path):
    config = load_config(None, [
        *COMMON, f"model.name={warm}", f"rl.method={method}", "rl.steps=16", "rl.lr=1e-3",
        "rl.adam_eps=1e-3", "rollout.n_groups=2", "rollout.group_size=4",
        f"run.out={tmp_path}",
    ])
    records = train_rl(config)
    assert [r["step"] for r in records] == list(range(1, 17))
    assert_full_diagnostics(records)
    assert rewarded_share(tmp_path / "final") >= warm_share + 0.15


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_runs_multi_turn_steps_with_full_diagnostics(method, warm, tmp_path):
    config = load_config(None, [
        *COMMON, f"model.name={warm}", f"rl.method={method}", "rl.steps=3", "rl.lr=1e-3",
        "rl.adam_eps=1e-3", "rollout.env_kwargs={rounds: 2}", "rollout.n_groups=1",
        "rollout.group_size=4", "rl.mini_batch_size=4", f"run.out={tmp_path}",
    ])
    records = train_rl(config)
    assert [r["step"] for r in records] == [1, 2, 3]
    assert all(r[mn.TURNS] == 2 for r in records)
    assert_full_diagnostics(records)
    assert (tmp_path / "final" / "config.json").is_file()


def test_sampo_steps_on_sokoban_with_env_worker_processes(tmp_path):
    config = load_config(None, [
        "model.name=tiny", "rollout.env=sokoban", "rollout.env_workers=1",
        "rollout.max_turns=2", "rollout.max_new_tokens=8", "rollout.n_groups=2",
        "rollout.group_size=2", "rl.method=SAMPO", "rl.steps=1", "eval.episodes=2",
        "eval.at_start=false", "run.threads=1", "run.progress=false", "run.tensorboard=false",
        f"run.out={tmp_path}",
    ])
    (record,) = train_rl(config)
    assert record[mn.VALID_FORMAT_RATIO] == 0.0 and record[mn.TURNS] == 2.0
    assert record[mn.SAMPLES] == 8.0 and record["eval/episodes"] == 2.0
    assert_full_diagnostics([record])
