"""Generation and trainer throughput: evaluation agents against the weight-streaming floor,
rollout tokens/s per generation backend, RL step time, peak memory, and what each of the CPU
recipe's speed levers saves.

Run ``python bench/trainer.py`` (``--section agents|trainer|recipe|all``, ``--models
tiny,smollm2``, ``--threads 1,2``, ``--max-new-tokens``). Each case runs in a fresh subprocess
(so its peak resident memory and its thread count are its own).

``agents``: each agent of ``--agents`` (``hf:float32``, ``hf:bfloat16``, ``vllm:float32``;
``:noprefix`` turns the agent's prefix cache off, e.g. ``vllm:float32:noprefix``) plays
``--episodes`` Sokoban episodes of ``--turns`` turns (the study's prompt, history 2, one episode
at a time by default) with the agents' default sampling (T 0.6, top-p 0.95, top-k 20). It
prints generated tokens/s over the time spent in the agent's generation (prefill included, as a
user waits for it) against the floor measured in the same subprocess: memory bandwidth (a sum
over a 512 MiB tensor with the case's threads) over the bytes of the weights a decode step
reads, and float32 matrix-product FLOP/s: the floor is the time to read every weight once per
decode step plus 2 × parameters FLOPs per prompt token prefilled (none reused), and the decode
floor the first alone, times the episodes in flight.

``trainer``: per model and ``--dtypes``, rolls out ``groups × group-size`` Sokoban episodes for
``turns`` turns and times one full RL step (rollout + scoring + reference + SAMPO update), with
``--env-workers`` env processes; the ``hf`` backend and, when vLLM is importable, ``vllm`` on
the same prompts (``--backends``; ``hf+noprefix`` is ``hf`` without its prefix cache). The
tables print ratios against the first row and, per model, vLLM against transformers.

``recipe``: one RL step of ``--config`` (the CPU recipe, ``configs/recipe/sokoban-rl.yaml``)
from the checkpoint ``--model`` over ``--groups × --group-size`` episodes, first with every
speed lever off (the trainer as it was: the full vocabulary, π_old from a forward pass, the
method's KL and entropy terms with their reference and full-vocabulary entropy passes, no shared
prompt prefix in the forward passes, 64 prompts per generation call), then adding them one at a
time (``--levers``): ``vocab`` (``model.task_vocab``: the checkpoint cut to its task's ids),
``sampler`` (π_old from the sampler), ``noreg`` (KL and entropy coefficients 0, which skips
both passes), ``prefix`` (the shared prompt prefix once per forward pass), ``batch`` (all
episodes in one generation call). Every row plays the same levels with the same random
streams, so the rows differ in cost, not in work (up to the probability mass ``vocab`` cuts).
It prints seconds per episode and the ratio to the first row, then each row's cost per turn
split into generation (the rollout less its env calls), update (scoring, advantages and the
update mini-batches) and env (resets and steps), with the prompts' mean length in tokens.

``alfworld``: the same for the ALFWorld recipe (``configs/recipe/alfworld-rl.yaml`` from
``runs/learn-alfworld-bc/final``, a model built on its task vocabulary, so every row has
``vocab``), e.g. ``python bench/trainer.py --section alfworld --groups 8 --group-size 8``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# bench/alfworld.py shares its name with the ``alfworld`` package the ALFWorld env imports: keep
# this folder off the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def memory_bandwidth() -> float:
    """Bytes per second a reduction over a 512 MiB float32 tensor reads (median of 5), with
    torch's current thread count."""
    import torch

    data = torch.ones(2**27)
    data.sum()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        data.sum()
        times.append(time.perf_counter() - start)
    return data.numel() * data.element_size() / statistics.median(times)


def matmul_flops() -> float:
    """Float32 FLOP/s of a 1024² matrix product (median of 5), with torch's thread count."""
    import torch

    a = torch.randn(1024, 1024)
    a @ a
    times = []
    for _ in range(5):
        start = time.perf_counter()
        a @ a
        times.append(time.perf_counter() - start)
    return 2 * 1024**3 / statistics.median(times)


def model_folder(model: str) -> str | None:
    """A model folder for ``model``: the tiny trainer model saved to a temporary folder, or
    ``None`` for the embedded SmolLM2 (each agent loads it its own way)."""
    if model != "tiny":
        return None if model == "smollm2" else model
    from arlarena_baselines.trainer.config import ModelConfig
    from arlarena_baselines.trainer.models import save_model, smollm2_tokenizer, tiny_model

    tokenizer = smollm2_tokenizer()
    return str(save_model(tiny_model(ModelConfig(name="tiny"), tokenizer), tokenizer,
                          tempfile.mkdtemp(prefix="bench-tiny-")))


def run_agent_case(model: str, spec: str, threads: int, args: argparse.Namespace) -> dict:
    """Decode throughput of one evaluation agent, in this process."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from arlarena_baselines.evaluation import EvalConfig, evaluate
    from arlarena_baselines.rollout.envs import EnvFactory
    from wrappers.agents import make_agent

    torch.set_num_threads(threads)
    name, dtype, *flags = spec.split(":")
    folder = model_folder(model)
    agent = make_agent(name, model=folder, dtype=dtype, max_new_tokens=args.max_new_tokens,
                       prefix_caching="noprefix" not in flags)
    if name == "hf":
        params = streamed_parameters(agent.model)
    else:
        with torch.device("meta"):
            shape = AutoModelForCausalLM.from_config(
                AutoConfig.from_pretrained(folder or agent._folder))
        params = streamed_parameters(shape)
    timed = {"s": 0.0, "prefill": 0, "steps": 0}
    generate = agent.generate

    def timed_generate(prompts, seeds):
        start = time.perf_counter()
        out = generate(prompts, seeds)
        timed["s"] += time.perf_counter() - start
        timed["prefill"] += sum(map(len, prompts))
        timed["steps"] += max(map(len, out), default=0)
        return out

    agent.generate = timed_generate
    results = tempfile.mkdtemp(prefix="bench-agent-")
    try:
        evaluate(
            EvalConfig(EnvFactory(env_kwargs={"max_episode_steps": args.turns}),
                       episodes=args.episodes, batch_size=args.agent_batch, seed=10_000),
            agent, Path(results) / "r.jsonl", progress=False,
        )
        usage = agent.usage()
    finally:
        agent.close()
        for path in (results, folder if model == "tiny" else None):
            if path:
                shutil.rmtree(path, ignore_errors=True)
    weight_bytes = params * torch.finfo(getattr(torch, dtype)).bits // 8
    bandwidth, flops = memory_bandwidth(), matmul_flops()
    floor_s = (timed["steps"] * weight_bytes / bandwidth
               + timed["prefill"] * 2 * params / flops)
    return {
        "model": model, "agent": spec, "threads": threads,
        "tokens_per_s": usage["completion_tokens"] / timed["s"],
        "prompt_tokens": usage["prompt_tokens"] / max(usage["requests"], 1),
        "floor_per_s": usage["completion_tokens"] / floor_s,
        "decode_floor_per_s": bandwidth / weight_bytes * min(args.agent_batch, args.episodes),
        "bandwidth_gbs": bandwidth / 1e9, "gflops": flops / 1e9,
        "weight_mib": weight_bytes / 2**20,
    }


def streamed_parameters(model) -> int:
    """Parameters a decode step reads in full: all but an untied input embedding (of which
    it reads one row per token)."""
    total = sum(p.numel() for p in model.parameters())
    embedding = model.get_input_embeddings().weight
    if embedding is not model.get_output_embeddings().weight:
        total -= embedding.numel()
    return total


def run_case(model: str, dtype: str, backend: str, args: argparse.Namespace) -> dict:
    """One RL-step measurement, in this process (called in a subprocess by :func:`main`)."""
    import torch

    from arlarena_baselines.rollout import SamplingParams, Task, collect
    from arlarena_baselines.trainer.config import load_config
    from arlarena_baselines.trainer.rl import RLTrainer

    threads = int(args.threads.split(",")[0])
    torch.set_num_threads(threads)
    out = tempfile.mkdtemp(prefix="bench-trainer-")
    engine, _, flag = backend.partition("+")
    config = load_config(None, [
        f"model.name={model}", f"model.dtype={dtype}", f"rollout.backend={engine}",
        f"rollout.prefix_caching={flag != 'noprefix'}",
        "rollout.env=sokoban", f"rollout.n_groups={args.groups}",
        f"rollout.group_size={args.group_size}", f"rollout.max_turns={args.turns}",
        f"rollout.max_new_tokens={args.max_new_tokens}",
        f"rollout.env_workers={args.env_workers}", f"run.threads={threads}",
        "rl.method=SAMPO", "rl.steps=1",
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


RECIPE_LEVERS = ("vocab", "sampler", "noreg", "prefix", "batch")
SOKOBAN_CONFIG, SOKOBAN_MODEL = "configs/recipe/sokoban-rl.yaml", "runs/learn-bc/final"
ALFWORLD_CONFIG = "configs/recipe/alfworld-rl.yaml"
ALFWORLD_MODEL = "runs/learn-alfworld-bc/final"


def recipe_overrides(levers: set[str], episodes: int) -> list[str]:
    """The config overrides of a recipe case with ``levers`` on and the others off."""
    kl, entropy = (0.0, 0.0) if "noreg" in levers else (0.01, 0.001)
    return [
        f"model.task_vocab={'vocab' in levers}",
        f"rollout.sampler_log_probs={'sampler' in levers}",
        f"rollout.gen_batch_size={episodes if 'batch' in levers else 64}",
        f"rl.method_overrides.kl_coef={kl}", f"rl.method_overrides.entropy_coef={entropy}",
        "rl.method_overrides.cold_start_steps=1000",  # one round of rollouts, no filter
    ]


def _timed(owner: object, name: str, totals: dict[str, float]) -> None:
    """Wrap ``owner.name`` to add its wall and CPU seconds to ``totals``."""
    inner = getattr(owner, name)

    def timed(*args, **kwargs):
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            totals["wall"] += time.perf_counter() - start
            totals["cpu"] += time.process_time() - cpu

    setattr(owner, name, timed)


def run_recipe_case(levers: str, args: argparse.Namespace) -> dict:
    """One RL step of the recipe with ``levers`` ('+'-joined; ``none``), in this process:
    its wall and CPU seconds split into generation (the rollout less its env calls), update
    (scoring, advantages and the updates) and env (resets and steps), and the prompts'
    mean length in tokens."""
    import torch

    from arlarena_baselines.rollout import forward
    from arlarena_baselines.trainer.config import load_config
    from arlarena_baselines.trainer.rl import RLTrainer

    on = set() if levers == "none" else set(levers.split("+"))
    torch.set_num_threads(int(args.threads.split(",")[0]))
    if "prefix" not in on:  # the forward passes' half of rollout.prefix_caching only: the
        forward.SHARED_PREFIX_MIN = sys.maxsize  # decode loop's prefix cache predates the levers
    out = tempfile.mkdtemp(prefix="bench-recipe-")
    episodes = args.groups * args.group_size
    config = load_config(args.config, [
        f"model.name={args.model}", f"rollout.n_groups={args.groups}",
        f"rollout.group_size={args.group_size}", "rl.steps=1", "rl.mini_batch_size=null",
        "eval.episodes=0", "run.progress=false", "run.tensorboard=false", f"run.out={out}",
        f"run.threads={args.threads.split(',')[0]}", *recipe_overrides(on, episodes),
        *args.set,
    ])
    trainer = RLTrainer(config)
    env = {"wall": 0.0, "cpu": 0.0}
    _timed(trainer.pool, "reset", env)
    _timed(trainer.pool, "step", env)
    prompts: list[int] = []
    rollout = trainer.rollout

    def counted(*a, **k):
        result = rollout(*a, **k)
        prompts.extend(len(s.prompt_ids) for s in result.samples)
        return result

    trainer.rollout = counted
    try:
        start, cpu = time.perf_counter(), time.process_time()
        metrics = trainer.train_step(0)
        step_s, step_cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        trainer.close()
        shutil.rmtree(out, ignore_errors=True)
    rollout_s = metrics["time/rollout_s"]
    return {
        "levers": levers, "episodes": episodes, "step_s": step_s, "step_cpu_s": step_cpu,
        "samples": metrics["rollout/step_samples"], "rollout_s": rollout_s,
        "gen_s": rollout_s - env["wall"], "env_s": env["wall"], "env_cpu_s": env["cpu"],
        "update_s": step_s - rollout_s, "success": metrics["rollout/success_rate"],
        "prompt_tokens": sum(prompts) / max(len(prompts), 1),
        "response_tokens": metrics["rollout/response_length"],
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def recipe_table(args: argparse.Namespace, first: str = "none") -> None:
    levers = args.levers.split(",")
    cases = [first] + ["+".join(([] if first == "none" else [first]) + levers[: i + 1])
                       for i in range(len(levers))]
    rows = [row for case in cases if (row := _subprocess(args, f"recipe:{case}"))]
    if not rows:
        return
    base = rows[0]["step_s"] / rows[0]["episodes"]
    print(f"RL step of {args.config} from {args.model}: {args.groups} tasks x "
          f"{args.group_size} rollouts, {args.threads.split(',')[0]} torch thread(s)")
    print("| levers | turns | success | step s | rollout s | rest s | s / episode | "
          "peak MiB | cheaper than the first row |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        per = r["step_s"] / r["episodes"]
        print(f"| {r['levers']} | {r['samples']:.0f} | {r['success']:.3f} | {r['step_s']:.1f} | "
              f"{r['rollout_s']:.1f} | {r['step_s'] - r['rollout_s']:.1f} | {per:.3f} | "
              f"{r['peak_mib']:.0f} | {base / per:.2f}x |")
    print("\nPer turn (ms of wall time; CPU: the process's CPU time, which a busy machine "
          "barely moves):")
    print("| levers | prompt tok | response tok | ms / turn | generation | update | env | "
          "CPU ms / turn | env CPU ms / turn |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        turns = max(r["samples"], 1.0)
        ms = {k: 1000 * r[k] / turns for k in ("step_s", "gen_s", "update_s", "env_s",
                                                "step_cpu_s", "env_cpu_s")}
        print(f"| {r['levers']} | {r['prompt_tokens']:.0f} | {r['response_tokens']:.1f} | "
              f"{ms['step_s']:.1f} | {ms['gen_s']:.1f} ({r['gen_s'] / r['step_s']:.0%}) | "
              f"{ms['update_s']:.1f} ({r['update_s'] / r['step_s']:.0%}) | {ms['env_s']:.1f} "
              f"({r['env_s'] / r['step_s']:.0%}) | {ms['step_cpu_s']:.1f} | "
              f"{ms['env_cpu_s']:.1f} |")


def _subprocess(args: argparse.Namespace, case: str) -> dict | None:
    argv = [a for a in sys.argv[1:] if not a.startswith("--case")]
    done = subprocess.run([sys.executable, __file__, *argv, "--case", case],
                          capture_output=True, text=True)
    if done.returncode != 0:
        print(f"{case} failed:\n{done.stderr[-1500:]}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def agents_table(args: argparse.Namespace) -> None:
    rows = [row for model in args.models.split(",") for spec in args.agents.split(",")
            for threads in args.threads.split(",")
            if (row := _subprocess(args, f"agent:{model}:{spec}:{threads}"))]
    if not rows:
        return
    print(f"Sokoban eval, study prompt (history 2), {args.episodes} episode(s) x {args.turns} "
          f"turns, {args.agent_batch} in flight, <= {args.max_new_tokens} new tokens, "
          "the agents' sampling (T 0.6, top-p 0.95, top-k 20)")
    print("| model | agent | threads | prompt tok | gen tok/s | floor tok/s | of floor | "
          "decode floor tok/s | GB/s | GFLOP/s | weights MiB | vs first row of model |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    first: dict[str, float] = {}
    for r in rows:
        base = first.setdefault(r["model"], r["tokens_per_s"])
        print(f"| {r['model']} | {r['agent']} | {r['threads']} | {r['prompt_tokens']:.0f} | "
              f"{r['tokens_per_s']:.1f} | {r['floor_per_s']:.1f} | "
              f"{r['tokens_per_s'] / r['floor_per_s']:.2f} | {r['decode_floor_per_s']:.1f} | "
              f"{r['bandwidth_gbs']:.1f} | {r['gflops']:.0f} | {r['weight_mib']:.0f} | "
              f"{r['tokens_per_s'] / base:.2f} |")


def trainer_table(args: argparse.Namespace) -> None:
    backends = [b for b in args.backends.split(",")
                if b != "vllm" or importlib.util.find_spec("vllm")]
    rows = [row for model in args.models.split(",") for dtype in args.dtypes.split(",")
            for backend in backends if (row := _subprocess(args, f"{model}:{dtype}:{backend}"))]
    if not rows:
        return
    base = rows[0]
    hf_rate = {(r["model"], r["dtype"]): r["gen_tokens_per_s"] for r in rows
               if r["backend"] == "hf"}
    print(f"Sokoban, study prompt (history 2), {args.groups} groups x {args.group_size}, "
          f"{args.turns} turns, <= {args.max_new_tokens} new tokens, "
          f"{args.threads.split(',')[0]} torch threads, {args.env_workers} env workers; "
          f"SAMPO step; backends {', '.join(backends)}")
    print("| model | dtype | backend | prompt tok | gen tok/s | vs hf | step s | rollout s | "
          "update s | peak MiB | step vs first |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['model']} | {r['dtype']} | {r['backend']} | {r['prompt_tokens']:.0f} | "
            f"{r['gen_tokens_per_s']:.1f} | "
            f"{r['gen_tokens_per_s'] / hf_rate.get((r['model'], r['dtype']), 1.0):.2f} | "
            f"{r['step_s']:.2f} | {r['rollout_s']:.2f} | {r['update_s']:.2f} | "
            f"{r['peak_mib']:.0f} | {r['step_s'] / base['step_s']:.1f}x |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", choices=("agents", "trainer", "recipe", "alfworld", "all"),
                        default="all")
    parser.add_argument("--config", default=SOKOBAN_CONFIG,
                        help="recipe: the RL config (alfworld: " + ALFWORLD_CONFIG + ")")
    parser.add_argument("--model", default=SOKOBAN_MODEL,
                        help="recipe: the starting checkpoint (a full-vocabulary BC)")
    parser.add_argument("--levers", default=",".join(RECIPE_LEVERS),
                        help="recipe: levers added one row at a time")
    parser.add_argument("--models", default="tiny,smollm2")
    parser.add_argument("--agents", default="hf:float32,hf:bfloat16,vllm:float32")
    parser.add_argument("--episodes", type=int, default=1, help="agents: episodes")
    parser.add_argument("--agent-batch", type=int, default=1, help="agents: episodes in flight")
    parser.add_argument("--dtypes", default="float32", help="trainer: model.dtype values")
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--threads", default="1", help="torch threads, comma-separated "
                        "(agents: one case each; trainer: the first)")
    parser.add_argument("--env-workers", type=int, default=0, help="trainer: env processes")
    parser.add_argument("--backends", default="hf,hf+noprefix,vllm",
                        help="trainer: generation backends "
                        "(vllm where importable)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="recipe, alfworld: more config overrides")
    parser.add_argument("--case", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.section == "alfworld":  # the ALFWorld recipe's own defaults
        args.config = ALFWORLD_CONFIG if args.config == SOKOBAN_CONFIG else args.config
        args.model = ALFWORLD_MODEL if args.model == SOKOBAN_MODEL else args.model
        args.levers = ",".join(lever for lever in args.levers.split(",") if lever != "vocab")
    if args.case:
        kind, *rest = args.case.split(":")
        if kind == "agent":
            model, *spec, threads = rest
            print(json.dumps(run_agent_case(model, ":".join(spec), int(threads), args)))
        elif kind == "recipe":
            print(json.dumps(run_recipe_case(rest[0], args)))
        else:
            print(json.dumps(run_case(kind, *rest, args)))
        return
    if args.section in ("agents", "all"):
        agents_table(args)
    if args.section in ("trainer", "all"):
        trainer_table(args)
    if args.section in ("recipe", "all") and Path(args.model).is_dir():
        recipe_table(args)
    if args.section == "alfworld":
        # The ALFWorld recipe's BC model is built on its task vocabulary: every row has it.
        recipe_table(args, first="vocab")


if __name__ == "__main__":
    main()
