"""Every metric key ARLArena logs, in one place: the zoo's, the trainers' and their names.

Holds the keys returned by the policy losses (``actor/…``), by
:func:`~arlarena_baselines.algos.diagnostics.stability_metrics` (``stability/…``), the
pass-through counters of rollouts, filtering and optimisation, the trainers' own keys (the
rollout summary, updates, time, SFT) and :func:`eval_key`, the held-out evaluation's name of a
rollout metric. Other modules import these constants instead of spelling the strings.

Keys under ``time/`` and ``perf/`` (:data:`MACHINE_PREFIXES`) measure the machine, not the
training: they differ between otherwise identical runs (the resume test ignores them).
"""

from __future__ import annotations

from itertools import product

__all__ = [
    "CLIP_FRAC",
    "COLLAPSE",
    "DUAL_CLIP_FRAC",
    "ENTROPY",
    "EPISODES",
    "EVAL_PREFIX",
    "GEN_TOKENS_PER_S",
    "GRAD_NORM",
    "GRAD_NORM_MAX",
    "GROUPS_FILTERED",
    "GROUPS_TOPPED_UP",
    "KEPT_GROUPS",
    "KL_LOSS",
    "KL_OLD",
    "KL_REF",
    "KL_REF_SHARE_KEYS",
    "LR",
    "MACHINE_PREFIXES",
    "OOB_FRAC",
    "OOB_HIGH_FRAC",
    "OOB_LOW_FRAC",
    "OOB_NEG_FRAC",
    "OOB_POS_FRAC",
    "PG_LOSS",
    "RATIO_MEAN",
    "RESPONSE_LENGTH",
    "RETURN",
    "ROLLOUT_ENTROPY",
    "ROUNDS",
    "SAMPLES",
    "SAPO_GATE_MEAN",
    "SCORE",
    "SEQS_MASKED",
    "SEQS_MASKED_FRAC",
    "SFT_LOSS",
    "SFT_LR",
    "SFT_TOKEN_ACC",
    "SKIPPED_UPDATES",
    "STAB_CLIP_FRAC",
    "STAB_OOB_HIGH_FRAC",
    "STAB_OOB_LOW_FRAC",
    "STEP_SKIPPED",
    "SUCCESS_RATE",
    "TIME_ROLLOUT",
    "TIME_STEP",
    "TIME_UPDATE",
    "TOTAL_LOSS",
    "TURNS",
    "UPDATES",
    "VALID_FORMAT_RATIO",
    "eval_key",
    "kl_ref_share_key",
]

# Returned by every policy loss (``actor/``): computed on the ratio the loss uses.
PG_LOSS = "actor/pg_loss"
RATIO_MEAN = "actor/ratio_mean"
CLIP_FRAC = "actor/clip_frac"
OOB_LOW_FRAC = "actor/ratio_oob_low_frac"
OOB_HIGH_FRAC = "actor/ratio_oob_high_frac"
DUAL_CLIP_FRAC = "actor/dual_clip_frac"
SAPO_GATE_MEAN = "actor/sapo_gate_mean"
SEQS_MASKED = "actor/seqs_masked"
SEQS_MASKED_FRAC = "actor/seqs_masked_frac"
KL_LOSS = "actor/kl_loss"
ENTROPY = "actor/entropy"
TOTAL_LOSS = "actor/loss"

# Stability diagnostics (``stability/``): always on the token ratio, comparable across methods.
KL_OLD = "stability/kl_old"
KL_REF = "stability/kl_ref"
STAB_CLIP_FRAC = "stability/clip_frac"
OOB_FRAC = "stability/ratio_oob_frac"
STAB_OOB_LOW_FRAC = "stability/ratio_oob_low_frac"
STAB_OOB_HIGH_FRAC = "stability/ratio_oob_high_frac"
# Outside the band on either side, by the advantage's sign (the study's Figure 3).
OOB_POS_FRAC = "stability/ratio_oob_pos_frac"
OOB_NEG_FRAC = "stability/ratio_oob_neg_frac"

# Pass-through counters logged beside the diagnostics.
GROUPS_FILTERED = "rollout/groups_filtered"
GROUPS_TOPPED_UP = "rollout/groups_topped_up"
VALID_FORMAT_RATIO = "rollout/valid_format_ratio"
SUCCESS_RATE = "rollout/success_rate"
GRAD_NORM = "actor/grad_norm"


def kl_ref_share_key(adv_positive: bool, seq_ratio_high: bool, entropy_high: bool) -> str:
    """Key of the share of KL-to-ref carried by one (sign A) × (seq ratio) × (entropy) group."""
    adv = "adv_pos" if adv_positive else "adv_neg"
    ratio = "ratio_ge1" if seq_ratio_high else "ratio_lt1"
    ent = "ent_high" if entropy_high else "ent_low"
    return f"stability/kl_ref_share/{adv}/{ratio}/{ent}"


# The 8 keys, ordered as the bits (adv_positive, seq_ratio_high, entropy_high) count up.
KL_REF_SHARE_KEYS: tuple[str, ...] = tuple(
    kl_ref_share_key(a, r, e) for a, r, e in product((False, True), repeat=3)
)


# The trainers' own keys: the rollout summary, the updates, the machine (time/, perf/) and SFT.
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
    """The held-out evaluation's name of a rollout metric (``rollout/x`` → ``eval/x``).

    >>> eval_key(SUCCESS_RATE)
    'eval/success_rate'
    """
    return EVAL_PREFIX + rollout_key.split("/", 1)[1]
