"""``arlarena demo``: the suite in a few minutes on a CPU (what ``make run`` runs).

Every env of the suite with its expert or scripted agent and a random agent on the first tasks
of a task panel, the embedded SmolLM2 on a short Sokoban episode, and a short behaviour-cloning
run of a tiny model; then one table, what its rows mean, and where the results, the run folder
and a Sankey graph were written. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DEMO_RUNS", "DemoRun", "register"]


@dataclass(frozen=True)
class DemoRun:
    """Agents on the first ``episodes`` tasks of a panel."""

    panel: str
    agents: tuple[str, ...]
    episodes: int
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    agent_kwargs: dict[str, Any] = field(default_factory=dict)


DEMO_RUNS: tuple[DemoRun, ...] = (
    DemoRun("sokoban-eval", ("expert", "random"), 4),
    DemoRun("webshop-small-eval", ("webshop-heuristic", "webshop-random"), 4),
    DemoRun("math-arithmetic", ("math-coder", "math-random"), 4),
    DemoRun("alfworld-eval-ood", ("expert", "random"), 3, {"max_episode_steps": 25}),
    # The untrained 135M model: a short episode each, a short answer budget.
    DemoRun("sokoban-eval", ("hf",), 2, {"max_episode_steps": 2},
            {"max_new_tokens": 48, "batch_size": 2}),
)
"""What the demo evaluates (ALFWorld and SmolLM2 episodes are cut short to fit the time)."""

ROW_NOTES = (
    "expert: the env's privileged planner (the task can be won); webshop-heuristic / "
    "math-coder: scripted agents that read only the page or problem; random / webshop-random / "
    "math-random: uniform random actions (the floor); hf:smollm2: the embedded SmolLM2-135M-"
    "Instruct, untrained for this task: no answer of it passes the study's format check "
    "(<think>...</think><action>...</action>; valid format 0%), so it scores 0, which is what "
    "behaviour cloning and RL are for. ALFWorld episodes stop at 25 turns and SmolLM2's at 2 "
    "here (the envs allow 50 and 15)."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo", help="the whole suite in a few minutes on a CPU (make run)",
        description=__doc__.splitlines()[0].split(": ", 1)[1],
    )
    p.add_argument("--out", default="results/make-run", help="folder for every output")
    p.add_argument("--no-model", action="store_true",
                   help="skip SmolLM2 and the behaviour-cloning run (no torch needed)")
    p.set_defaults(func=run)


def _evaluate(demo: DemoRun, out: Path) -> list[Path]:
    from arlarena_baselines.cli._panel import checked_panel
    from arlarena_baselines.evaluation import EvalConfig, evaluate
    from wrappers.agents import make_agent

    spec, record = checked_panel(demo.panel, demo.episodes, demo.env_kwargs)
    config = EvalConfig(env=spec.env, episodes=demo.episodes, seed=spec.seed,
                        env_kwargs={**spec.env_kwargs, **demo.env_kwargs},
                        reset_options=dict(spec.options), record={"panel": record})
    paths = []
    for name in demo.agents:
        agent = make_agent(name, **{"seed": 0, **demo.agent_kwargs})
        path = out / f"{spec.env.split('/')[-1]}__{agent.name.replace(':', '_')}.jsonl"
        path.unlink(missing_ok=True)
        try:
            evaluate(config, agent, path, progress=False)
        finally:
            agent.close()
        paths.append(path)
    return paths


def _clone(out: Path) -> str:
    """A few behaviour-cloning steps of a tiny random Llama on expert Sokoban episodes; the
    held-out line of the run."""
    from arlarena_baselines.trainer.config import load_config
    from arlarena_baselines.trainer.sft import train_sft

    run = out / "bc-tiny"
    config = load_config(None, [
        "model.name=tiny", "rollout.template=sokoban_compact", "rollout.history_length=0",
        "rollout.max_turns=6", "rollout.max_new_tokens=16", "rollout.n_groups=4",
        "rollout.group_size=4", "eval.episodes=16", "eval.every=0", "sft.episodes=48",
        "sft.response_template=<think>{action}</think><action>{action}</action>",
        "sft.epochs=10", "sft.batch_size=16", "sft.lr=1e-2", "run.threads=1",
        "run.checkpoint_every=0", "run.tensorboard=false", "run.progress=false",
        f"run.out={run}",
    ])
    import shutil

    shutil.rmtree(run, ignore_errors=True)
    records = train_sft(config)
    evals = [r for r in records if r.get("eval/success_rate") is not None]
    first, last = evals[0], evals[-1]
    return (
        f"Behaviour cloning ({last['step']} steps on {config.sft.episodes} expert Sokoban "
        f"episodes, a tiny random Llama): on {config.eval.episodes} held-out levels, valid format "
        f"{first['eval/valid_format_ratio']:.0%} -> {last['eval/valid_format_ratio']:.0%}, success "
        f"{first['eval/success_rate']:.0%} -> {last['eval/success_rate']:.0%} (the format comes "
        f"first; reading the grid takes longer: `make learn`). Run folder: {run}"
    )


def _sankey(paths: list[Path], out: Path) -> Path | None:
    from arlarena_baselines.analysis import build_sankey, episode_flows, write_pngs
    from arlarena_baselines.evaluation.results import read_records

    flows = [f for p in paths if p.name.startswith("ALFWorld")
             for f in episode_flows(read_records(p))]
    if not flows:
        return None
    png = out / "analysis" / "ALFWorld-v0_sankey.png"
    sankey = build_sankey(flows, max_steps=10, title="ALFWorld, the expert's and the random "
                          "agent's episodes: their first 10 actions, by type, and the outcome")
    write_pngs([(sankey, png)], "matplotlib")
    return png


def run(args: argparse.Namespace) -> int:
    import arlarena_envs  # noqa: F401  (registers the ids)
    from arlarena_baselines.evaluation import format_table, summarize
    from arlarena_baselines.evaluation.results import read_records

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if not args.no_model:
        import torch

        # One thread: on two cores shared with anything else, two are often slower.
        torch.set_num_threads(1)
    paths: list[Path] = []
    for demo in DEMO_RUNS:
        if args.no_model and "hf" in demo.agents:
            continue
        began = time.perf_counter()
        paths += _evaluate(demo, out)
        print(f"{', '.join(demo.agents)} on {demo.panel}: {time.perf_counter() - began:.0f} s",
              file=sys.stderr)
    clone = None
    if not args.no_model:
        began = time.perf_counter()
        clone = _clone(out)
        print(f"behaviour cloning: {time.perf_counter() - began:.0f} s", file=sys.stderr)
    png = _sankey(paths, out)
    rows = [r for r in summarize(r for p in paths for r in read_records(p)) if r.group == "all"]
    print(format_table(rows))
    print(ROW_NOTES)
    if clone:
        print(clone)
    print(f"Results (every turn): {out}/*.jsonl (`arlarena report {out}/*.jsonl`)")
    if png:
        print(f"Sankey graph of the ALFWorld episodes: {png}")
    print(f"Done in {time.perf_counter() - start:.0f} s.")
    return 0
