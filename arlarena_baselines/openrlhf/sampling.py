"""A step's samples drawn and filtered as ``arlarena train`` does; the evaluation's sampling.

The plug-in (:mod:`.plugin`) puts these in OpenRLHF 0.11.2's ``SamplesGenerator`` and
``compute_eval_metrics``:

- :func:`step_samples` replaces ``generate_samples``: it generates rounds of
  ``rollout.batch_size`` prompts × ``n_samples_per_prompt`` episodes with OpenRLHF's own
  ``_generate_vllm`` (its filter off), and keeps them through the method's
  :class:`~arlarena_baselines.algos.DynamicSampler` (:func:`~arlarena_baselines.algos.make_sampler`:
  the library's DAPO rule on episode returns, the cold start, the round limit and the study's
  top-up), so a step trains on ``rollout.batch_size`` whole groups, in OpenRLHF's layout. It
  counts steps from the resumed checkpoint's ``global_step`` (:func:`resume_step`) and ends the
  run after ``ARLARENA_STEPS`` (:class:`~.settings.RunSettings`). Each kept sample carries the
  step's rounds, kept, filtered and topped-up groups in ``info`` (logged as metrics);
- :func:`eval_sampling` gives the periodic evaluation the study's nucleus and top-k sampling;
- :func:`eval_metrics` adds the episodes' success rate, score and return (``eval/success_rate``,
  ``eval/score``, ``eval/return``, the names of ``arlarena train``'s held-out evaluation) to
  OpenRLHF's, whose ``pass1`` is the mean return.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from arlarena_baselines.algos import Method, make_sampler
from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.openrlhf import turn_logs
from arlarena_baselines.openrlhf.settings import RunSettings

__all__ = ["EVAL_RETURN", "EVAL_SCORE", "EVAL_SUCCESS", "eval_metrics", "eval_sampling",
           "resume_step", "step_samples"]

# OpenRLHF's loggers put "eval/" in front: the names of `arlarena train`'s evaluation.
EVAL_SUCCESS, EVAL_SCORE, EVAL_RETURN = (mn.eval_key(k).removeprefix(mn.EVAL_PREFIX)
                                         for k in (turn_logs.SUCCESS, mn.SCORE, mn.RETURN))
_STEP = "arlarena_step"  # the generator's attribute: steps trained so far


def resume_step(generator: Any, global_step: int) -> None:
    """Tell ``generator`` how many steps the run has trained (0, or the checkpoint's)."""
    setattr(generator, _STEP, int(global_step))


def _sleep(generator: Any, call: str) -> None:
    if generator.args.vllm.enable_sleep:
        from openrlhf.trainer.ray.vllm_engine import batch_vllm_engine_call

        batch_vllm_engine_call(generator.vllm_engines, call)


def step_samples(generator: Any, method: Method, settings: RunSettings,
                 **generate_kwargs: Any) -> tuple[list[Any], float | None, int, bool]:
    """``generate_samples``'s ``(samples, pass rate %, prompts consumed, exhausted)`` for one
    step of ``method``; ``exhausted`` ends the run (dataset drained or step budget spent)."""
    args = generator.args
    step = getattr(generator, _STEP, 0)
    if settings.steps is not None and step >= settings.steps:
        return [], None, 0, True
    if getattr(generator, "_dataloader_iter", None) is None:
        generator._dataloader_iter = iter(generator.prompts_dataloader)
    groups, n = args.rollout.batch_size, args.rollout.n_samples_per_prompt
    sampler = make_sampler(method, groups, step)
    kept: list[Any] = []
    consumed, drained, seen = 0, False, 0
    _sleep(generator, "wake_up")
    try:
        while not sampler.done and not drained:
            experiences, used, drained = generator._generate_vllm(
                generator._dataloader_iter, groups, dynamic_filtering=False, **generate_kwargs
            )
            consumed += used
            seen += len(experiences) // n
            ids = [(sampler.rounds, i // n) for i in range(len(experiences))]
            returns = [float(e.rewards[0]) for e in experiences]
            keep = sampler.add(ids, returns) if experiences else torch.zeros(0, dtype=torch.bool)
            kept += [e for e, k in zip(experiences, keep.tolist(), strict=True) if k]
    finally:
        _sleep(generator, "sleep")
    if drained:
        generator._dataloader_iter = None
    resume_step(generator, step + 1)
    logs = {mn.ROUNDS: sampler.rounds, mn.KEPT_GROUPS: sampler.kept_groups,
            **sampler.metrics()}
    for experience in kept:
        experience.info.update({k: torch.tensor([float(v)]) for k, v in logs.items()})
    passed = sampler.kept_groups - sampler.topped_up_groups
    pass_rate = 100.0 * passed / seen if seen and sampler.filter_fn is not None else None
    done = drained or (settings.steps is not None and step + 1 >= settings.steps)
    return kept, pass_rate, consumed, done


def eval_sampling(generate_kwargs: dict[str, Any], settings: RunSettings) -> dict[str, Any]:
    """``generate_kwargs`` with the evaluation's ``top_p`` / ``top_k`` where set."""
    changes = {"top_p": settings.eval_top_p, "top_k": settings.eval_top_k}
    return {**generate_kwargs, **{k: v for k, v in changes.items() if v is not None}}


def eval_metrics(logs: dict[str, Any], samples: Sequence[Any]) -> dict[str, Any]:
    """OpenRLHF's evaluation ``logs`` plus the mean success, score and return of ``samples``."""
    if not samples:
        return logs
    success = [float(s.info[turn_logs.SUCCESS][0]) for s in samples if turn_logs.SUCCESS in s.info]
    scores = [float(s.scores[0]) for s in samples if s.scores is not None]
    returns = [float(s.rewards[0]) for s in samples if s.rewards is not None]
    extra = {EVAL_SUCCESS: success, EVAL_SCORE: scores, EVAL_RETURN: returns}
    return {**logs, **{k: sum(v) / len(v) for k, v in extra.items() if v}}

