"""Trainer throughput: rollout tokens/s per generation backend, RL step time, peak memory.

Run ``python bench/trainer.py`` (``--models tiny,smollm2``, ``--dtypes float32,bfloat16``,
``--groups``, ``--group-size``, ``--turns``, ``--max-new-tokens``, ``--threads``). Each case
runs in a fresh subprocess (so its peak resident memory is its own): it loads the model,
rolls out ``groups × group-size`` Sokoban episodes (the study's prompt, history 2) for
``turns`` turns and times one full RL step (rollout + scoring + reference + SAMPO update).
Generation throughput is measured for the ``hf`` backend and, when vLLM is importable, for
``vllm`` on the same prompts. The table prints ratios against the tiny float32 model and,
per model, vLLM against transformers.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import subprocess
import sys
import tempfile
import time


def run_case(model: str, dtype: str, backend: str, args: argparse.Namespace) -> dict:
    """One measurement, in this process (called in a subprocess by :func:`main`)."""
    import torch

    from arlarena_baselines.rollout import SamplingParams, Task, collect
    from arlarena_baselines.trainer.config import load_config
    from arlarena_baselines.trainer.rl import RLTrainer

    if args.threads:
        torch.set_num_threads(args.threads)
    out = tempfile.mkdtemp(prefix="bench-trainer-")
    config = load_config(None, [
        f"model.name={model}", f"model.dtype={dtype}", f"rollout.backend={backend}",
        "rollout.env=sokoban", f"rollout.n_groups={args.groups}",
        f"rollout.group_size={args.group_size}", f"rollout.max_turns={args.turns}",
        f"rollout.max_new_tokens={args.max_new_tokens}", "rl.method=SAMPO", "rl.steps=1",
        "rl.method_overrides={cold_start_steps: 100}", "eval.episodes=0",
        "run.progress=false", "run.tensorboard=false", f"run.out={out}",
    ])
    trainer = RLTrainer(config)
    try:
        sampling = SamplingParams(max_new_tokens=args.max_new_tokens)
        tasks = [Task(f"w{g}", 10_000 + g) for g in range(args.groups)]
        start = time.perf_counter()
        rollout = collect(trainer.pool, trainer.policy.responder(sampling), tasks,
                          args.group_size, max_turns=args.turns, seed=1)
        gen_s = time.perf_counter() - start
        start = time.perf_counter()
        metrics = trainer.train_step(0)
        step_s = time.perf_counter() - start
    finally:
        trainer.close()
    prompt_tokens = sum(len(s.prompt_ids) for s in rollout.samples) / len(rollout.samples)
    return {
        "model": model,
        "dtype": dtype,
        "backend": backend,
        "gen_tokens_per_s": rollout.generated_tokens / gen_s,
        "prompt_tokens": prompt_tokens,
        "samples": float(metrics["rollout/step_samples"]),
        "step_s": step_s,
        "rollout_s": metrics["time/rollout_s"],
        "update_s": metrics["time/update_s"],
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="tiny,smollm2")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = default)")
    parser.add_argument("--case", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(*args.case.split(":"), args)))
        return
    backends = ["hf"] + (["vllm"] if importlib.util.find_spec("vllm") else [])
    rows = []
    for model in args.models.split(","):
        for dtype in args.dtypes.split(","):
            for backend in backends:
                argv = [a for a in sys.argv[1:] if not a.startswith("--case")]
                done = subprocess.run(
                    [sys.executable, __file__, *argv, "--case", f"{model}:{dtype}:{backend}"],
                    capture_output=True, text=True,
                )
                if done.returncode != 0:
                    print(f"{model} {dtype} {backend} failed:\n{done.stderr[-1500:]}")
                    continue
                rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    if not rows:
        return
    base = rows[0]
    hf_rate = {(r["model"], r["dtype"]): r["gen_tokens_per_s"] for r in rows
               if r["backend"] == "hf"}
    print(f"Sokoban, study prompt (history 2), {args.groups} groups x {args.group_size}, "
          f"{args.turns} turns, <= {args.max_new_tokens} new tokens; SAMPO step "
          f"(vLLM {'present' if 'vllm' in backends else 'not installed'})")
    print("| model | dtype | backend | prompt tok | gen tok/s | vs hf | step s | rollout s | "
          "update s | peak MiB | step vs tiny fp32 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['model']} | {r['dtype']} | {r['backend']} | {r['prompt_tokens']:.0f} | "
            f"{r['gen_tokens_per_s']:.1f} | "
            f"{r['gen_tokens_per_s'] / hf_rate[(r['model'], r['dtype'])]:.2f} | "
            f"{r['step_s']:.2f} | {r['rollout_s']:.2f} | {r['update_s']:.2f} | "
            f"{r['peak_mib']:.0f} | {r['step_s'] / base['step_s']:.1f}x |"
        )


if __name__ == "__main__":
    main()
