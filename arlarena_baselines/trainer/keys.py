"""The trainer's own metric keys (the zoo's live in :mod:`~arlarena_baselines.algos.metric_names`)
and :func:`rollout_metrics`, the per-rollout summary.

Keys under ``time/`` and ``perf/`` measure the machine, not the training: they differ between
otherwise identical runs (the resume test ignores them).
"""

from __future__ import annotations

from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.rollout import Rollout

__all__ = [
    "COLLAPSE",
    "EPISODES",
    "EVAL_PREFIX",
    "GEN_TOKENS_PER_S",
    "GRAD_NORM_MAX",
    "KEPT_GROUPS",
    "LR",
    "MACHINE_PREFIXES",
    "RESPONSE_LENGTH",
    "RETURN",
    "ROLLOUT_ENTROPY",
    "ROUNDS",
    "SAMPLES",
    "SCORE",
    "SFT_LOSS",
    "SFT_LR",
    "SFT_TOKEN_ACC",
    "SKIPPED_UPDATES",
    "STEP_SKIPPED",
    "TIME_ROLLOUT",
    "TIME_STEP",
    "TIME_UPDATE",
    "TURNS",
    "UPDATES",
    "eval_key",
    "rollout_metrics",
]

EPISODES = "rollout/episodes"
SCORE = "rollout/score"
RETURN = "rollout/return"
TURNS = "rollout/turns"
RESPONSE_LENGTH = "rollout/response_length"
ROLLOUT_ENTROPY = "rollout/entropy"
"""The training rollouts' mean token entropy under π_old at the training temperature (the
sampler's, or the scoring pass's)."""
ROUNDS = "rollout/gen_rounds"
KEPT_GROUPS = "rollout/kept_groups"
SAMPLES = "rollout/step_samples"
STEP_SKIPPED = "rl/step_skipped"
SKIPPED_UPDATES = "actor/skipped_updates"
UPDATES = "actor/updates"
LR = "actor/lr"
GRAD_NORM_MAX = "actor/grad_norm_max"
COLLAPSE = "stability/collapse"
TIME_ROLLOUT = "time/rollout_s"
TIME_UPDATE = "time/update_s"
TIME_STEP = "time/step_s"
GEN_TOKENS_PER_S = "perf/gen_tokens_per_s"
SFT_LOSS = "sft/loss"
SFT_TOKEN_ACC = "sft/token_acc"
SFT_LR = "sft/lr"
EVAL_PREFIX = "eval/"
MACHINE_PREFIXES = ("time/", "perf/")


def eval_key(rollout_key: str) -> str:
    """The held-out evaluation's name of a rollout metric (``rollout/x`` → ``eval/x``)."""
    return EVAL_PREFIX + rollout_key.split("/", 1)[1]


def rollout_metrics(rollout: Rollout) -> dict[str, float]:
    """Success rate, valid-format ratio, score, return, turns and response length."""
    episodes, samples = rollout.episodes, rollout.samples
    n_ep, n_turns = max(len(episodes), 1), max(len(samples), 1)
    return {
        EPISODES: float(len(episodes)),
        mn.SUCCESS_RATE: sum(e.won for e in episodes) / n_ep,
        SCORE: sum(e.score for e in episodes) / n_ep,
        RETURN: sum(e.episode_return for e in episodes) / n_ep,
        TURNS: sum(e.turns for e in episodes) / n_ep,
        mn.VALID_FORMAT_RATIO: sum(s.valid for s in samples) / n_turns,
        RESPONSE_LENGTH: sum(len(s.response_ids) for s in samples) / n_turns,
    }
