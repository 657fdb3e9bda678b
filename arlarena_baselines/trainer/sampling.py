"""The sampling a run uses, resolved from its config and the env's study defaults.

Holds :func:`response_budget`, :func:`training_sampling` (the RL rollouts': refused unless it
is the full softmax at T > 0) and :func:`eval_sampling` (the held-out evaluation's). A config
field left ``null`` takes the study's value for the env
(:func:`arlarena_envs.registration.env_sampling`: the response budget and evaluation sampling
of its example scripts).
"""

from __future__ import annotations

from arlarena_baselines.rollout import SamplingParams
from arlarena_baselines.trainer.config import TrainConfig

__all__ = ["eval_sampling", "response_budget", "training_sampling"]


def _study(config: TrainConfig):
    from arlarena_envs.registration import env_sampling

    return env_sampling(config.rollout.env)


def response_budget(config: TrainConfig) -> int:
    """Tokens per response of the rollouts: ``rollout.max_new_tokens`` or the env's study
    budget."""
    return config.rollout.max_new_tokens or _study(config).max_tokens


def training_sampling(config: TrainConfig) -> SamplingParams:
    """The training rollouts' sampling, refused unless it is the full softmax at T > 0: the
    loss differentiates softmax(logits / T) over the whole vocabulary, so top-p / top-k
    truncation or greedy decoding would train on a distribution that was not sampled."""
    r = config.rollout
    sampling = SamplingParams(r.temperature, r.top_p, r.top_k, response_budget(config))
    if sampling.temperature == 0:
        raise ValueError("rollout.temperature must be > 0 for RL (greedy rollouts have no "
                         "sampling distribution to differentiate)")
    if sampling.truncated:
        raise ValueError(
            f"rollout.top_p={r.top_p}, rollout.top_k={r.top_k}: RL rollouts must sample the "
            "full softmax, because every log-prob of the loss (old, new, reference) is of the "
            "whole vocabulary; set rollout.top_p=1.0 and rollout.top_k=0 (the study's "
            "training sampling), and use eval.top_p / eval.top_k for evaluation"
        )
    return sampling


def eval_sampling(config: TrainConfig) -> SamplingParams:
    """The held-out evaluation's sampling: ``eval.*``, each ``null`` field the study's for the
    env; the budget is ``eval.max_new_tokens`` or the rollouts'."""
    e, study = config.eval, _study(config)
    return SamplingParams(
        temperature=study.temperature if e.temperature is None else e.temperature,
        top_p=study.top_p if e.top_p is None else e.top_p,
        top_k=study.top_k if e.top_k is None else e.top_k,
        max_new_tokens=e.max_new_tokens or response_budget(config),
    )
