"""``arlarena eval``: run agents on an env (or a task panel's tasks) and print the results table.

With ``--panel NAME`` the env, split, seeds and env kwargs come from the task panel, its tasks
are generated again and checked against its hashes first, and every episode record keeps the
panel's name and hash (``panel``), which ``arlarena report --compare`` reads.

Every results file opens with the settings that produced it; ``--resume`` refuses other
settings (``--force`` to continue anyway). API agents keep every answered request in a response
cache (in ``--out`` unless ``--cache-dir``), so a stopped run resumes without paying twice; a
spent ``--max-requests`` budget exits with status 3 and says how many episodes are unfinished.
This module only parses; :func:`~arlarena_baselines.evaluation.session.evaluate_agents` runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from arlarena_baselines.cli._choices import AGENTS, ENVS, PANELS, SPLITS, check_split
from arlarena_baselines.cli._extras import missing_extra

__all__ = ["register"]

_API_AGENTS = ("openai", "debate", "aggressive-debate")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval",
        help="evaluate agents on an environment",
        description="Run episodes with one or more agents through the study's wrapper stack, "
        "write every turn to JSONL as it goes and print a results table.",
    )
    p.add_argument("--env", default=None, type=ENVS, help="environment (default sokoban)")
    p.add_argument("--agent", default="expert", type=AGENTS,
                   help="comma-separated agents (default expert)")
    p.add_argument("--panel", default=None, type=PANELS, help="run the tasks of this task "
                   "panel of data/ (it sets the env, split, seeds and env kwargs; --episodes N "
                   "runs its first N); results record its name and hash")
    p.add_argument("--episodes", type=int, default=None,
                   help="tasks (env seeds) to run (default 50, or the panel's)")
    p.add_argument("--samples", type=int, default=1, help="rollouts per task (for pass@k)")
    p.add_argument("--seed", type=int, default=None, help="first env seed (default 0)")
    p.add_argument("--split", default=None, type=SPLITS,
                   help="reset option 'split', by env")
    p.add_argument("--env-kwargs", default="{}", help="JSON kwargs for gymnasium.make (with "
                   "--panel: added to the panel's, e.g. {\"max_episode_steps\": 3})")
    p.add_argument("--history-length", type=int, default=2)
    p.add_argument("--format-penalty", type=float, default=0.1)
    p.add_argument("--format-check", default="study", choices=("study", "strict"),
                   help="study: the study's check of the env (default); strict: ARLArena's")
    p.add_argument("--notice", action="store_true", help="say in the next prompt that a response "
                   "without an <action> block was not understood (the study says nothing)")
    p.add_argument("--batch-size", type=int, default=16, help="episodes in flight at once")
    p.add_argument("--env-workers", default="0", help="where the envs step: "
                   "0 in this process (default; agents that read their env, as the expert "
                   "does, need it), N worker processes, or ray / ray:N (Ray actors)")
    p.add_argument("--out", default="results", help="directory for the JSONL results")
    p.add_argument("--resume", action="store_true", help="continue existing results files "
                   "(episodes that ended with an error are run again)")
    p.add_argument("--overwrite", action="store_true", help="replace existing results files")
    p.add_argument("--force", action="store_true", help="with --resume: continue a results "
                   "file written with other settings (refused otherwise; a new settings record "
                   "marks where they change)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--threads", type=int, default=0, help="hf: torch CPU threads (default 0 = "
                   "auto: half the cores, at least 1; a thread more than the free cores "
                   "decodes several times slower)")
    g = p.add_argument_group("model agents (hf, vllm, openai, debate)")
    g.add_argument("--model", default=None, help="hf, vllm: path/id (default: embedded "
                   "SmolLM2); "
                   "openai: model name (default $OPENAI_MODEL); debate: model of 3 debaters")
    g.add_argument("--base-url", default=None, help="openai: endpoint (default $OPENAI_BASE_URL)")
    g.add_argument("--api-key", default=None, help="openai: key (default $OPENAI_API_KEY)")
    g.add_argument("--max-tokens", type=int, default=None, help="response token budget "
                   "(default: the study's for the env, e.g. 512 ALFWorld/WebShop, 500 Sokoban)")
    g.add_argument("--temperature", type=float, default=None, help="default: the study's "
                   "evaluation temperature for the env (0.6; Sokoban 0.4)")
    g.add_argument("--top-p", type=float, default=None, help="default: the env's (0.95; "
                   "Sokoban 1.0)")
    g.add_argument("--top-k", type=int, default=None, help="hf, vllm: default the env's "
                   "(20; Sokoban none); 0 disables. openai, debate: sent as top_k only when "
                   "given (vLLM honours it; the OpenAI API has none)")
    g.add_argument("--chat-template-kwargs", default="{}", help="hf, vllm: JSON keyword "
                   "arguments of the chat template, e.g. '{\"enable_thinking\": false}' (Qwen3)")
    g.add_argument("--concurrency", type=int, default=8, help="openai: requests in flight")
    g.add_argument("--timeout", type=float, default=60.0, help="openai: seconds per request "
                   "in all, the reply's body included")
    g.add_argument("--max-retries", type=int, default=5, help="openai: retries per request")
    g.add_argument("--continuation", choices=("chat", "completion"), default="chat",
                   help="openai, for an env that continues one response (math): the prompt as "
                   "one user message (chat), or the first message in the model's chat format "
                   "then the response so far, continued by /completions (completion)")
    g.add_argument("--chat-template", default=None, help="openai --continuation completion: "
                   "tokenizer name or path whose chat template formats the first message "
                   "(default: --model)")
    a = p.add_argument_group("API evaluation at scale (openai, debate)")
    a.add_argument("--cache-dir", default=None, help="keep every response in DIR/responses."
                   "sqlite (default: in --out), keyed by endpoint, model, messages and sampling "
                   "(above temperature 0 also by episode, turn and sample): a resume or rerun "
                   "never pays twice for a request")
    a.add_argument("--max-requests", type=int, default=None, help="request budget of this "
                   "command (attempts, failed ones included): when it is spent the run stops "
                   "with exit status 3, results and answered requests kept")
    a.add_argument("--prices", default=None, help="JSON (or a .json/.yaml file) of model -> "
                   '{"prompt": USD, "completion": USD} per million tokens, for costs')
    a.add_argument("--api-seed", type=int, default=None, help="send per-request seeds derived "
                   "from this, the sample index and the debater (servers that honour seeds "
                   "then repeat samples)")
    d = p.add_argument_group("debate agents (debate, aggressive-debate)")
    d.add_argument("--debaters", default=None, help="model@http://host:port/v1,model@... "
                   "(no @url: --base-url), or a YAML/JSON file with debaters, judge, rounds, "
                   "decision, prices")
    d.add_argument("--judge", default=None, help="model@url of the judge (decision 'judge')")
    d.add_argument("--rounds", type=int, default=None, help="debate rounds (default 2)")
    d.add_argument("--decision", choices=("vote", "judge"), default=None,
                   help="final action by plurality vote or by the judge (default: judge if "
                   "given)")
    p.set_defaults(func=run)


def _load_prices(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    path = Path(text)
    if path.is_file():
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            prices = yaml.safe_load(path.read_text(encoding="utf-8"))
        else:
            prices = json.loads(path.read_text(encoding="utf-8"))
    else:
        prices = json.loads(text)
    if not isinstance(prices, dict):
        raise ValueError("--prices must be an object of model -> price")
    return prices


def _agent_options(
    name: str, args: argparse.Namespace, shared: dict[str, Any], top_k_given: bool
) -> dict[str, Any]:
    """The options of agent ``name``; an API agent sends ``top_k`` only where ``--top-k`` is
    given (the OpenAI API has none: the env's default is not sent)."""
    if name in ("hf", "vllm"):
        return {"model": args.model, "max_new_tokens": args.max_tokens,
                "temperature": args.temperature, "top_p": args.top_p, "top_k": args.top_k,
                "seed": args.seed or 0,
                "chat_template_kwargs": _json_object(args.chat_template_kwargs,
                                                     "--chat-template-kwargs")}
    if name not in _API_AGENTS:
        return {"seed": args.seed or 0}
    options = {"model": args.model, "base_url": args.base_url, "api_key": args.api_key,
               "max_tokens": args.max_tokens, "temperature": args.temperature,
               "top_p": args.top_p, "concurrency": args.concurrency, "timeout": args.timeout,
               "max_retries": args.max_retries, "seed": args.api_seed,
               "top_k": args.top_k if top_k_given else None, **shared}
    if name == "openai":
        options.update(continuation=args.continuation, chat_template=args.chat_template)
    else:
        options.update(debaters=args.debaters, judge=args.judge, rounds=args.rounds,
                       decision=args.decision)
    return options


def _fill_sampling(args: argparse.Namespace, env_id: str) -> None:
    """Fill the sampling options left unset with the env's (the study's per-env settings)."""
    from arlarena_envs.registration import env_sampling

    study = env_sampling(env_id)
    for option, value in (("max_tokens", study.max_tokens), ("temperature", study.temperature),
                          ("top_p", study.top_p), ("top_k", study.top_k)):
        if getattr(args, option) is None:
            setattr(args, option, value)


def _json_object(text: str, flag: str) -> dict[str, Any]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"{flag} must be a JSON object, got {text!r}")
    return value


def _tasks(args: argparse.Namespace) -> dict[str, Any]:
    """The tasks: the env and its keyword arguments, and the EvalConfig fields of the tasks,
    from ``--panel`` (checked against its hashes), or from ``--env``, ``--split``, ``--seed``,
    ``--episodes``."""
    import arlarena_envs

    env_kwargs = _json_object(args.env_kwargs, "--env-kwargs")
    if args.panel is None:
        env_id = arlarena_envs.resolve_env_id(args.env or "sokoban")
        if args.split:
            check_split(env_id, args.split)
        return {"env": env_id, "env_kwargs": env_kwargs, "seed": args.seed or 0,
                "episodes": 50 if args.episodes is None else args.episodes,
                "reset_options": {"split": args.split} if args.split else {}}
    given = [flag for flag, value in (("--env", args.env), ("--split", args.split),
                                      ("--seed", args.seed)) if value is not None]
    if given:
        raise ValueError(f"--panel {args.panel} sets the env, split and seeds: drop "
                         f"{', '.join(given)}")
    from arlarena_baselines.cli._panel import checked_panel

    spec, record = checked_panel(args.panel, args.episodes, env_kwargs)
    return {"env": spec.env, "env_kwargs": {**spec.env_kwargs, **env_kwargs},
            "seed": spec.seed, "episodes": record["tasks"], "reset_options": dict(spec.options),
            "record": {"panel": record}}


def run(args: argparse.Namespace) -> int:
    from arlarena_baselines.evaluation import EvalConfig
    from arlarena_baselines.evaluation.session import evaluate_agents
    from arlarena_baselines.rollout.envs import EnvFactory
    from arlarena_envs.registration import check_env_kwargs, describe_tasks
    from wrappers.agents import check_agent_env, make_agent
    from wrappers.agents.cache import RequestBudget, ResponseCache

    if args.resume and args.overwrite:
        print("error: --resume and --overwrite exclude each other", file=sys.stderr)
        return 2
    top_k_given = args.top_k is not None
    names = [a.strip() for a in args.agent.split(",") if a.strip()]
    try:
        tasks = _tasks(args)
        _fill_sampling(args, tasks["env"])
        prices = _load_prices(args.prices)
        budget = RequestBudget(args.max_requests)
        stack = EnvFactory(tasks.pop("env"), tasks.pop("env_kwargs"), args.history_length,
                           args.format_penalty, format_check=args.format_check,
                           notice=args.notice)
        config = EvalConfig(stack, samples=args.samples, batch_size=args.batch_size,
                            env_workers=args.env_workers, **tasks)
        check_env_kwargs(stack.env, stack.env_kwargs)
        for name in names:
            check_agent_env(name, stack.env, stack.env_kwargs)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"tasks: {describe_tasks(config)}", file=sys.stderr)
    agents = [(name, lambda shared, name=name: make_agent(
        name, **_agent_options(name, args, {**shared, "prices": prices}, top_k_given)))
        for name in names]
    cache = None
    if any(name in _API_AGENTS for name in names):
        cache = ResponseCache(args.cache_dir or Path(args.out) / ResponseCache.FILE_NAME)
    threads = None
    if "hf" in names:  # the only agent that decodes with torch in this process
        from arlarena_baselines.trainer.runs import TorchThreads

        threads = TorchThreads(args.threads)
    try:
        return evaluate_agents(config, agents, args.out, cache=cache, budget=budget,
                               resume=args.resume, overwrite=args.overwrite, force=args.force,
                               progress=not args.no_progress, explain=missing_extra)
    finally:
        if threads is not None:
            threads.restore()
