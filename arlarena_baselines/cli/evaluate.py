"""``arlarena eval``: run agents on an env and print the results table."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval",
        help="evaluate agents on an environment",
        description="Run episodes with one or more agents through the study's wrapper stack, "
        "write every turn to JSONL as it goes and print a results table.",
    )
    p.add_argument("--env", default="sokoban", help="env name (sokoban, alfworld, webshop, "
                   "math) or a full ARLArena/... id")
    p.add_argument("--agent", default="expert",
                   help="comma-separated agents: expert, random, hf, openai, or any registered")
    p.add_argument("--episodes", type=int, default=50, help="tasks (env seeds) to run")
    p.add_argument("--samples", type=int, default=1, help="rollouts per task (for pass@k)")
    p.add_argument("--seed", type=int, default=0, help="first env seed")
    p.add_argument("--split", default=None, help="reset option 'split' (env-specific)")
    p.add_argument("--env-kwargs", default="{}", help="JSON kwargs for gymnasium.make")
    p.add_argument("--history-length", type=int, default=2)
    p.add_argument("--format-penalty", type=float, default=0.1)
    p.add_argument("--batch-size", type=int, default=16, help="episodes in flight at once")
    p.add_argument("--out", default="results", help="directory for the JSONL results")
    p.add_argument("--resume", action="store_true", help="continue existing results files")
    p.add_argument("--overwrite", action="store_true", help="replace existing results files")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    g = p.add_argument_group("model agents (hf, openai)")
    g.add_argument("--model", default=None, help="hf: path/id (default: embedded SmolLM2); "
                   "openai: model name (default $OPENAI_MODEL)")
    g.add_argument("--base-url", default=None, help="openai: endpoint (default $OPENAI_BASE_URL)")
    g.add_argument("--api-key", default=None, help="openai: key (default $OPENAI_API_KEY)")
    g.add_argument("--max-tokens", type=int, default=256, help="response token budget")
    g.add_argument("--temperature", type=float, default=0.6)
    g.add_argument("--top-p", type=float, default=0.95)
    g.add_argument("--concurrency", type=int, default=8, help="openai: requests in flight")
    g.add_argument("--timeout", type=float, default=60.0, help="openai: seconds per request")
    g.add_argument("--max-retries", type=int, default=5, help="openai: retries per request")
    p.set_defaults(func=run)


def _agent_options(name: str, args: argparse.Namespace) -> dict[str, Any]:
    if name == "hf":
        return {"model": args.model, "max_new_tokens": args.max_tokens,
                "temperature": args.temperature, "top_p": args.top_p, "seed": args.seed}
    if name == "openai":
        return {"model": args.model, "base_url": args.base_url, "api_key": args.api_key,
                "max_tokens": args.max_tokens, "temperature": args.temperature,
                "top_p": args.top_p, "concurrency": args.concurrency, "timeout": args.timeout,
                "max_retries": args.max_retries}
    return {"seed": args.seed}


def run(args: argparse.Namespace) -> int:
    import arlarena_envs
    from arlarena_baselines.evaluation import EvalConfig, evaluate, format_table, summarize
    from arlarena_baselines.evaluation.results import read_records
    from wrappers.agents import AgentError, make_agent

    if args.resume and args.overwrite:
        print("error: --resume and --overwrite exclude each other", file=sys.stderr)
        return 2
    try:
        env_id = arlarena_envs.resolve_env_id(args.env)
        env_kwargs = json.loads(args.env_kwargs)
    except (ValueError, json.JSONDecodeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    config = EvalConfig(
        env=env_id, episodes=args.episodes, samples=args.samples, seed=args.seed,
        history_length=args.history_length, format_penalty=args.format_penalty,
        batch_size=args.batch_size, env_kwargs=env_kwargs,
        reset_options={"split": args.split} if args.split else {},
    )
    paths = []
    status = 0
    for name in [a.strip() for a in args.agent.split(",") if a.strip()]:
        try:
            agent = make_agent(name, **_agent_options(name, args))
        except (ValueError, ModuleNotFoundError, OSError) as error:
            print(f"error: agent {name!r}: {error}", file=sys.stderr)
            return 2
        label = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{env_id.split('/')[-1]}__{agent.name}")
        path = Path(args.out) / f"{label}.jsonl"
        if path.exists() and args.overwrite:
            path.unlink()
        if path.exists() and not args.resume:
            print(f"error: {path} exists; pass --resume to continue it or --overwrite",
                  file=sys.stderr)
            return 2
        try:
            evaluate(config, agent, path, resume=args.resume, progress=not args.no_progress)
        except AgentError as error:
            print(f"error: {agent.name} stopped the run: {error}\n"
                  f"finished episodes are kept in {path}; rerun with --resume", file=sys.stderr)
            status = 1
        finally:
            agent.close()
        paths.append(path)
        if status:
            break
    records = [r for path in paths if path.exists() for r in read_records(path)]
    print(format_table(summarize(records)))
    print("results: " + ", ".join(str(p) for p in paths))
    return status
