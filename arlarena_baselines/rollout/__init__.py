"""Multi-turn rollouts for training: env pools, generation backends, step samples.

- :mod:`.samples`: :class:`StepSample`, :class:`EpisodeResult`, :class:`Rollout`;
- :mod:`.envs`: :class:`EnvFactory`, the :class:`EnvPool` interface, in-process and
  worker-process pools, :func:`make_env_pool`;
- :mod:`.generation`: :class:`SamplingParams` (:data:`TRAIN_SAMPLING`, :data:`EVAL_SAMPLING`),
  the :class:`GenerationBackend` interface, :class:`HFBackend`, :func:`make_backend`;
- :mod:`.vllm_backend`: :class:`VLLMBackend` (``vllm``: an engine synced after each update);
- :mod:`.forward`: packing (prompt, response) pairs, response log-probs and entropies;
- :mod:`.collector`: :class:`Task`, the responders and :func:`collect`;
- :mod:`.templates`: compact prompt variants (``sokoban_compact``).
"""

from arlarena_baselines.rollout import templates
from arlarena_baselines.rollout.collector import (
    AgentResponder,
    ModelResponder,
    Reply,
    Task,
    call_seed,
    collect,
)
from arlarena_baselines.rollout.envs import (
    EnvFactory,
    EnvPool,
    InProcessEnvPool,
    ProcessEnvPool,
    make_env_pool,
)
from arlarena_baselines.rollout.forward import (
    PackedBatch,
    pack_pairs,
    response_log_probs,
    right_aligned,
    sample_log_probs,
    score_samples,
)
from arlarena_baselines.rollout.generation import (
    BACKENDS,
    EVAL_SAMPLING,
    TRAIN_SAMPLING,
    GenerationBackend,
    HFBackend,
    SamplingParams,
    make_backend,
)
from arlarena_baselines.rollout.samples import EpisodeResult, Rollout, StepSample
from arlarena_baselines.rollout.vllm_backend import VLLMBackend
from wrappers.agents.chat import encode_prompt, encode_response

__all__ = [
    "BACKENDS",
    "EVAL_SAMPLING",
    "TRAIN_SAMPLING",
    "AgentResponder",
    "EnvFactory",
    "EnvPool",
    "EpisodeResult",
    "GenerationBackend",
    "HFBackend",
    "InProcessEnvPool",
    "ModelResponder",
    "PackedBatch",
    "ProcessEnvPool",
    "Reply",
    "Rollout",
    "SamplingParams",
    "StepSample",
    "Task",
    "VLLMBackend",
    "call_seed",
    "collect",
    "encode_prompt",
    "encode_response",
    "make_backend",
    "make_env_pool",
    "pack_pairs",
    "response_log_probs",
    "right_aligned",
    "sample_log_probs",
    "score_samples",
    "templates",
]
