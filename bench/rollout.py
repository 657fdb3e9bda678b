"""Rollout generation throughput: transformers ``generate`` against vLLM on the same prompts.

Run ``python bench/rollout.py`` (``--models tiny,smollm2``, ``--prompts``, ``--max-new-tokens``,
``--rounds``). Per model, both generation backends (``hf`` and, when vLLM is importable,
``vllm``) sample one response per prompt for a batch of Sokoban prompts (the study's prompt,
history 2) with the training sampling (T = 1.0); the backend is built and warmed up first,
then the fastest of ``rounds`` timed calls counts. The table prints generated tokens per
second and the vLLM / transformers ratio measured in the same run. vLLM's engine keeps its
default CPU binding (all cores but one, which its scheduler keeps); transformers uses torch's
default thread count.
"""

from __future__ import annotations

import argparse
import importlib.util
import time

from arlarena_baselines.rollout import (
    EnvFactory,
    SamplingParams,
    encode_prompt,
    make_backend,
)
from arlarena_baselines.trainer.config import ModelConfig
from arlarena_baselines.trainer.models import load_policy


def sokoban_prompts(tokenizer, count: int) -> list[list[int]]:
    """The first-turn prompts of ``count`` Sokoban tasks, tokenised with the chat template."""
    env = EnvFactory("sokoban")()
    return [encode_prompt(tokenizer, env.reset(seed=seed)[0]) for seed in range(count)]


def tokens_per_second(backend_name: str, model_name: str, args: argparse.Namespace) -> dict:
    """Generated tokens per second of one backend on one model (best of ``args.rounds``)."""
    model, tokenizer = load_policy(ModelConfig(name=model_name))
    prompts = sokoban_prompts(tokenizer, args.prompts)
    sampling = SamplingParams(max_new_tokens=args.max_new_tokens)
    backend = make_backend(backend_name, model, tokenizer, batch_size=args.prompts)
    try:
        backend.generate(prompts[:2], SamplingParams(max_new_tokens=4), seed=0)
        best = 0.0
        for round_ in range(args.rounds):
            start = time.perf_counter()
            responses = backend.generate(prompts, sampling, seed=round_)
            elapsed = time.perf_counter() - start
            best = max(best, sum(len(r) for r in responses) / elapsed)
    finally:
        backend.close()
    prompt_tokens = sum(len(p) for p in prompts) / len(prompts)
    return {"model": model_name, "backend": backend_name, "prompt_tokens": prompt_tokens,
            "tokens_per_s": best}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="tiny,smollm2")
    parser.add_argument("--prompts", type=int, default=32, help="prompts per generate call")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2, help="timed calls per backend")
    args = parser.parse_args()
    has_vllm = importlib.util.find_spec("vllm") is not None
    backends = ["hf", "vllm"] if has_vllm else ["hf"]
    rows = [tokens_per_second(backend, model, args)
            for model in args.models.split(",") for backend in backends]
    hf_rate = {r["model"]: r["tokens_per_s"] for r in rows if r["backend"] == "hf"}
    print(f"Sokoban first turns (study prompt), {args.prompts} prompts x <= "
          f"{args.max_new_tokens} new tokens, T = 1.0, best of {args.rounds} "
          f"(vLLM {'present' if has_vllm else 'not installed'})")
    print("| model | backend | prompt tok | gen tok/s | vs hf |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['backend']} | {r['prompt_tokens']:.0f} | "
              f"{r['tokens_per_s']:.1f} | {r['tokens_per_s'] / hf_rate[r['model']]:.2f} |")


if __name__ == "__main__":
    main()
