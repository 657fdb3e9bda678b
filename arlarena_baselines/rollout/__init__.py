"""Episodes for evaluation and training: the one episode loop, env pools, responders, samples.

- :mod:`.episodes`: :func:`play`, the one loop every episode is played by;
- :mod:`.collector`: training's side: :class:`ModelResponder`, :class:`StepSamples`,
  :func:`collect` (evaluation's is :mod:`arlarena_baselines.evaluation.runner`);
- :mod:`.samples`: :class:`StepSample`, :class:`Rollout`;
- :mod:`.envs`: :class:`EnvFactory`, the :class:`EnvPool` interface, in-process and
  worker-process pools; :mod:`.ray_pool`: Ray actors; :mod:`.pools`: :func:`make_env_pool`;
- :mod:`.continuation`: the token ids of a continued response (TIR Math);
- :mod:`.generation`: :class:`SamplingParams` (:data:`TRAIN_SAMPLING`, :data:`EVAL_SAMPLING`),
  the :class:`GenerationBackend` interface, :class:`HFBackend`, :func:`make_backend`;
- :mod:`.vllm_backend`: :class:`VLLMBackend` (``vllm``: an engine synced after each update);
- :mod:`.forward`: packing (prompt, response) pairs, response log-probs and entropies;
- :mod:`.templates`: compact prompt variants (``sokoban_compact``).

Names load from their module on first use: the loop and pools need no torch (``arlarena report``).
"""

import importlib
from typing import Any

_HOMES = {
    "episodes": ("AgentResponder", "Consumer", "Episode", "Reply", "Responder", "Start", "Task",
                 "Turn", "format_valid", "play"),
    "collector": ("ModelResponder", "StepSamples", "call_seed", "collect", "group_starts"),
    "envs": ("EnvFactory", "EnvPool", "InProcessEnvPool", "ProcessEnvPool"),
    "pools": ("make_env_pool",),
    "forward": ("PackedBatch", "pack_pairs", "response_log_probs", "right_aligned",
                "sample_log_probs", "score_samples"),
    "generation": ("BACKENDS", "EVAL_SAMPLING", "TRAIN_SAMPLING", "GenerationBackend",
                   "HFBackend", "SamplingParams", "make_backend"),
    "samples": ("EpisodeResult", "Rollout", "StepSample"),
    "vllm_backend": ("VLLMBackend",),
    "wrappers.agents.chat": ("encode_prompt", "encode_response"),
}
_MODULES = {name: module for module, names in _HOMES.items() for name in names}

__all__ = sorted([*_MODULES, "templates"])


def __getattr__(name: str) -> Any:
    if name == "templates":
        return importlib.import_module(f"{__name__}.templates")
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = _MODULES[name]
    if module == "generation":  # the built-in engines register themselves in BACKENDS
        importlib.import_module(f"{__name__}.vllm_backend")
    return getattr(importlib.import_module(module if "." in module else f"{__name__}.{module}"),
                   name)
