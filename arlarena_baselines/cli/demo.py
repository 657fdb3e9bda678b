"""``arlarena demo``: the suite in a few minutes on a CPU (what ``make run`` runs).

Every env of the suite with its expert or scripted agent and a random agent on the first tasks
of a task panel, the embedded SmolLM2 on a short Sokoban episode, the same model as an API
model (the ``openai`` agent against a local OpenAI-compatible endpoint serving it), and a short
behaviour-cloning run of a tiny model; then one table, what its rows mean, and where the
results, the run folder and a Sankey graph were written. Nothing is downloaded.
:func:`run_demo` is the whole of it, for any :class:`DemoRun` list and cloning settings (the
tests run it smaller).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CLONE", "DEMO_RUNS", "DemoResult", "DemoRun", "register", "run_demo"]


@dataclass(frozen=True)
class DemoRun:
    """Agents on the first ``episodes`` tasks of a panel.

    ``served``: an agent made once with ``agent_kwargs``, evaluated as itself if ``agents``
    names it, and served on a local OpenAI-compatible endpoint (:mod:`wrappers.agents.serve`)
    for the ``openai`` agent, which asks it for model ``agent_kwargs["model"]``.
    """

    panel: str
    agents: tuple[str, ...]
    episodes: int
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    agent_kwargs: dict[str, Any] = field(default_factory=dict)
    served: str | None = None

    @property
    def needs_model(self) -> bool:
        """Whether it runs the embedded model (torch)."""
        return "hf" in (*self.agents, self.served)


DEMO_RUNS: tuple[DemoRun, ...] = (
    DemoRun("sokoban-eval", ("expert", "random"), 4),
    DemoRun("webshop-small-eval", ("webshop-heuristic", "webshop-random"), 4),
    DemoRun("math-arithmetic", ("math-coder", "math-random"), 4),
    DemoRun("alfworld-eval-ood", ("expert", "random"), 3, {"max_episode_steps": 25}),
    # The untrained 135M model: a short episode each, a short answer budget; evaluated as a
    # local model, then as an API model is (the openai agent, the model behind an endpoint).
    DemoRun("sokoban-eval", ("hf", "openai"), 2, {"max_episode_steps": 2},
            {"max_new_tokens": 48, "batch_size": 2, "model": "smollm2"}, served="hf"),
)
"""What the demo evaluates (ALFWorld and SmolLM2 episodes are cut short to fit the time)."""

CLONE: tuple[str, ...] = (
    "model.name=tiny", "rollout.template=sokoban_compact", "rollout.history_length=0",
    "rollout.max_turns=6", "rollout.max_new_tokens=16", "rollout.n_groups=4",
    "rollout.group_size=4", "eval.episodes=16", "eval.every=0", "sft.episodes=48",
    "sft.response_template=<think>{action}</think><action>{action}</action>",
    "sft.epochs=10", "sft.batch_size=16", "sft.lr=1e-2", "run.threads=1",
    "run.checkpoint_every=0", "run.tensorboard=false", "run.progress=false",
)
"""The behaviour-cloning run: a tiny random Llama on expert Sokoban episodes."""

ROW_NOTES = (
    "expert: the env's privileged planner (the task can be won); webshop-heuristic / "
    "math-coder: scripted agents that read only the page or problem; random / webshop-random / "
    "math-random: uniform random actions (the floor); hf:smollm2: the embedded SmolLM2-135M-"
    "Instruct, untrained for this task: no answer of it passes the study's format check "
    "(<think>...</think><action>...</action>; valid format 0%), so it scores 0, which is what "
    "behaviour cloning and RL are for; openai:smollm2: the `openai` agent, as it evaluates any "
    "API model, here against a local OpenAI-compatible endpoint serving the same SmolLM2 "
    "(`arlarena eval --agent openai --model NAME` with $OPENAI_BASE_URL and $OPENAI_API_KEY "
    "puts a provider's model in this row). ALFWorld episodes stop at 25 turns and SmolLM2's at "
    "2 here (the envs allow 50 and 15)."
)


@dataclass
class DemoResult:
    """What :func:`run_demo` made: the table's rows (``Summary``, group ``all``), the results
    files, the behaviour-cloning run's held-out records (``None``: not run) and its folder,
    and the Sankey graph (``None``: no ALFWorld episodes)."""

    rows: list[Any]
    paths: list[Path]
    clone: list[dict[str, Any]] | None
    clone_dir: Path | None
    png: Path | None


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo", help="the whole suite in a few minutes on a CPU (make run)",
        description=__doc__.splitlines()[0].split(": ", 1)[1],
    )
    p.add_argument("--out", default="results/make-run", help="folder for every output")
    p.add_argument("--no-model", action="store_true",
                   help="skip SmolLM2 (also as an API model) and the behaviour-cloning run "
                   "(no torch needed)")
    p.set_defaults(func=run)


def _evaluate(demo: DemoRun, out: Path) -> list[Path]:
    from arlarena_baselines.cli._panel import checked_panel
    from arlarena_baselines.evaluation import EvalConfig, evaluate
    from arlarena_baselines.rollout.envs import EnvFactory
    from wrappers.agents import make_agent
    from wrappers.agents.serve import AgentServer, agent_reply

    spec, record = checked_panel(demo.panel, demo.episodes, demo.env_kwargs)
    stack = EnvFactory(spec.env, {**spec.env_kwargs, **demo.env_kwargs})
    config = EvalConfig(stack, episodes=demo.episodes, seed=spec.seed,
                        reset_options=dict(spec.options), record={"panel": record})
    kwargs = {"seed": 0, **demo.agent_kwargs}
    paths = []
    with contextlib.ExitStack() as stack:
        served = None
        if demo.served is not None:  # one model: evaluated as itself and behind an endpoint
            served = make_agent(demo.served, **kwargs)
            stack.callback(served.close)
            server = stack.enter_context(AgentServer(agent_reply(served), kwargs["model"]))
            kwargs |= {"base_url": server.base_url, "api_key": "EMPTY",
                       "max_tokens": kwargs.get("max_new_tokens", 512)}
        for name in demo.agents:
            agent = served if name == demo.served else make_agent(name, **kwargs)
            path = out / f"{spec.env.split('/')[-1]}__{agent.name.replace(':', '_')}.jsonl"
            path.unlink(missing_ok=True)
            try:
                evaluate(config, agent, path, progress=False)
            finally:
                if agent is not served:
                    agent.close()
            paths.append(path)
    return paths


def _clone(out: Path, overrides: Sequence[str]) -> tuple[list[dict[str, Any]], Path]:
    """The behaviour-cloning run of ``overrides`` in ``out/bc-tiny``: its held-out records."""
    from arlarena_baselines.algos import metric_names as mn
    from arlarena_baselines.trainer.config import load_config
    from arlarena_baselines.trainer.sft import train_sft

    run = out / "bc-tiny"
    config = load_config(None, [*overrides, f"run.out={run}"])
    shutil.rmtree(run, ignore_errors=True)
    records = train_sft(config)
    return [r for r in records if r.get(mn.eval_key(mn.SUCCESS_RATE)) is not None], run


def _clone_line(evals: list[dict[str, Any]], run: Path) -> str:
    first, last = evals[0], evals[-1]
    return (
        f"Behaviour cloning ({last['step']} steps on expert Sokoban episodes, a tiny random "
        f"Llama): on the held-out levels, valid format {first['eval/valid_format_ratio']:.0%} "
        f"-> {last['eval/valid_format_ratio']:.0%}, success {first['eval/success_rate']:.0%} -> "
        f"{last['eval/success_rate']:.0%} (the format comes first; reading the grid takes "
        f"longer: `make learn`). Run folder: {run}"
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


def run_demo(
    out: Path,
    runs: Sequence[DemoRun] = DEMO_RUNS,
    clone: Sequence[str] | None = CLONE,
    model: bool = True,
) -> DemoResult:
    """Evaluate ``runs`` and (with ``clone``, the cloning run's config overrides) clone the
    expert into ``out``; without ``model``, the runs that need the embedded model and the
    cloning run are skipped (no torch needed)."""
    import arlarena_envs  # noqa: F401  (registers the ids)
    from arlarena_baselines.evaluation import summarize
    from arlarena_baselines.evaluation.results import read_records

    out.mkdir(parents=True, exist_ok=True)
    if model:
        import torch

        # One thread: on two cores shared with anything else, two are often slower.
        torch.set_num_threads(1)
    paths: list[Path] = []
    for demo in runs:
        if demo.needs_model and not model:
            continue
        began = time.perf_counter()
        paths += _evaluate(demo, out)
        print(f"{', '.join(demo.agents)} on {demo.panel}: {time.perf_counter() - began:.0f} s",
              file=sys.stderr)
    evals, clone_dir = None, None
    if model and clone is not None:
        began = time.perf_counter()
        evals, clone_dir = _clone(out, clone)
        print(f"behaviour cloning: {time.perf_counter() - began:.0f} s", file=sys.stderr)
    rows = [r for r in summarize(r for p in paths for r in read_records(p)) if r.group == "all"]
    return DemoResult(rows, paths, evals, clone_dir, _sankey(paths, out))


def run(args: argparse.Namespace) -> int:
    from arlarena_baselines.evaluation import format_table

    start = time.perf_counter()
    out = Path(args.out)
    result = run_demo(out, model=not args.no_model)
    print(format_table(result.rows))
    print(ROW_NOTES)
    if result.clone:
        print(_clone_line(result.clone, result.clone_dir))
    print(f"Results (every turn): {out}/*.jsonl (`arlarena report {out}/*.jsonl`)")
    if result.png:
        print(f"Sankey graph of the ALFWorld episodes: {result.png}")
    print(f"Done in {time.perf_counter() - start:.0f} s.")
    return 0
