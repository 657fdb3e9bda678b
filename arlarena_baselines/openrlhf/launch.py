"""One OpenRLHF run of an env × method with the study's settings, as a ``ray job submit`` command.

``arlarena train openrlhf ENV METHOD [options] [-- extra OpenRLHF flags]`` (also
``scripts/openrlhf/train.sh``) calls :func:`run`. It writes the task datasets (one row per env
seed, :func:`write_tasks`) under ``--out`` and submits
``python3 -m openrlhf.cli.train_ppo_ray`` to the Ray cluster, with the agent (:mod:`.agent`)
as ``--train.agent_func_path`` and a runtime env that runs the plug-in (:mod:`.plugin`) in
every worker and names the env and the method (:mod:`.settings`). ``--dry-run`` prints the
command and writes nothing. Both first check the command, extra flags included, with
OpenRLHF's own parser and checks (:mod:`.cli`). ``--panel`` / ``--eval-panel`` take the
training / held-out tasks from task panels of ``data/`` (checked against their hashes; the
panels' names and hashes are kept in ``tasks/panels.json``); ``--chat-template-kwargs`` reaches
the agent's chat template.

Settings: the method's hyperparameters are the study's on the env
(:func:`~arlarena_baselines.algos.study_method`, sent as ``ARLARENA_METHOD_OVERRIDES``: what
differs from :data:`~arlarena_baselines.algos.METHODS`); the rest are the defaults of
:class:`~arlarena_baselines.trainer.config.TrainConfig` (16 groups × 8 rollouts, lr 1e-6,
one epoch, one update per rollout batch, temperature 1.0, format penalty 0.1, evaluation of
32 held-out tasks at T = 0.6, top-p 0.95, top-k 20 every 10 steps, a checkpoint every 10
steps) and the turn limits of the env registrations. The run stops after ``--steps`` steps
(``ARLARENA_STEPS``); the plug-in draws and filters each step's groups with the method's own
rule (:mod:`.sampling`), so OpenRLHF's dynamic filtering stays off. ``--data.max_len`` bounds
the whole conversation of an episode; envs whose episodes reach 16K tokens or more train with
ring attention over packed samples (:attr:`EnvRun.ring_attn_size`), so that no GPU holds the
logits of more than 8K tokens (see :mod:`.sizing`). vLLM's prefix cache is on: each turn
re-sends the whole conversation, and the cache is reset at every weight sync.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from arlarena_baselines.bounds import Bounded, bounded
from arlarena_baselines.trainer.config import TrainConfig
from arlarena_envs.registration import ENV_SPECS, env_sampling, resolve_env_id

if TYPE_CHECKING:
    from arlarena_baselines.algos import Method

__all__ = [
    "AGENT_FILE",
    "ENVS",
    "SETUP_HOOK",
    "EnvRun",
    "Launch",
    "openrlhf_args",
    "panel_tasks",
    "run",
    "runtime_env",
    "submit_command",
    "write_tasks",
]

AGENT_FILE = Path(__file__).with_name("agent.py")
SETUP_HOOK = "arlarena_baselines.openrlhf.plugin.install"


@dataclass(frozen=True)
class EnvRun:
    """How one env trains under OpenRLHF.

    Attributes:
        env: the name :class:`~arlarena_baselines.rollout.envs.EnvFactory` takes (it also
            picks the study's settings, :func:`~arlarena_baselines.algos.study_env`).
        max_len: tokens of a whole episode (first prompt + every response and feedback).
        train_options, eval_options: reset options of the training and held-out tasks.
        ring_attn_size: GPUs that share one packed micro-batch (ring attention), so that each
            holds ``max_len / ring_attn_size`` tokens of it.
    """

    env: str
    max_len: int
    train_options: dict[str, Any] = field(default_factory=dict)
    eval_options: dict[str, Any] = field(default_factory=dict)
    ring_attn_size: int = 1

    @property
    def max_turns(self) -> int:
        """The turn limit of the env's registration."""
        return ENV_SPECS[resolve_env_id(self.env)].max_episode_steps


ENVS: dict[str, EnvRun] = {
    "sokoban": EnvRun("sokoban", 16384, {"split": "train"}, {"split": "eval"}, ring_attn_size=2),
    "alfworld": EnvRun("alfworld", 32768, {"split": "train"},
                       {"split": "eval_out_of_distribution"}, ring_attn_size=4),
    "webshop": EnvRun("webshop", 16384, {"split": "train"}, {"split": "eval"}, ring_attn_size=2),
    "webshop-small": EnvRun("ARLArena/WebShop-Small-v0", 16384, {"split": "train"},
                            {"split": "eval"}, ring_attn_size=2),
    "math": EnvRun("math", 8192, {"dataset": "train"}, {"dataset": "gen_eval"}),
    "bandit": EnvRun("ARLArena/Bandit-v0", 8192),
}


@dataclass(frozen=True)
class Launch(Bounded):
    """One run: env × method, model, cluster shape, output folder. Values out of bounds (no
    nodes, no steps, chat-template kwargs that are no mapping) raise a one-line ``ValueError``
    when it is made: the dry run and the real run make it alike."""

    prefix: ClassVar[str] = "--"

    env: str
    method: str
    model: str = "Qwen/Qwen3-4B"
    nodes: int = bounded(1, ge=1)
    gpus_per_node: int = bounded(8, ge=1)
    steps: int = bounded(TrainConfig().rl.steps, ge=1)
    out: str | None = None
    address: str = "http://127.0.0.1:8265"
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.chat_template_kwargs, dict):
            raise ValueError("--chat-template-kwargs must be a JSON object, got "
                             f"{json.dumps(self.chat_template_kwargs)}")
        self.run  # noqa: B018  (an unknown env is refused here too)

    @property
    def run(self) -> EnvRun:
        if self.env not in ENVS:
            raise ValueError(f"unknown env {self.env!r}; known: {', '.join(ENVS)}")
        return ENVS[self.env]

    @property
    def resolved(self) -> Method:
        """The method at the study's settings on this env."""
        from arlarena_baselines.algos import study_method

        return study_method(self.method, self.run.env)

    @property
    def overrides(self) -> dict[str, Any]:
        """What the study changes on this env from the method of ``METHODS``."""
        from arlarena_baselines.algos import get_method, method_fields

        base, method = get_method(self.method), self.resolved
        return {k: getattr(method, k) for k in method_fields(method)
                if getattr(method, k) != getattr(base, k)}

    @property
    def out_dir(self) -> Path:
        return Path(self.out or f"runs/openrlhf/{self.env}-{self.resolved.name}").resolve()

    @property
    def train_tasks(self) -> int:
        """Tasks in the training set: ``steps`` batches of groups, × the filter's rounds."""
        m, config = self.resolved, TrainConfig()
        rounds = m.max_num_gen_batches if m.filtering is not None else 1
        return self.steps * config.rollout.n_groups * rounds


def write_tasks(path: Path, env: str, seeds: Sequence[int], options: dict[str, Any]) -> Path:
    """A JSONL prompt dataset: one task per seed (``prompt`` names it, ``label`` holds it)."""
    from arlarena_baselines.openrlhf.settings import Task

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for seed in seeds:
            row = {"prompt": f"{env} task {seed}", "label": Task(seed, options).label(),
                   "datasource": env}
            f.write(json.dumps(row) + "\n")
    return path


def _method_flags(m: Method) -> list[str]:
    flags = [
        "--actor.eps_clip_low_high", str(m.clip_low), str(m.clip_high),
        "--actor.policy_loss_type", "gspo" if m.clipping == "gspo" else "ppo",
        "--actor.loss_agg_mode",
        "token-mean" if m.aggregation == "token-mean" else "seq-mean-token-mean",
        "--algo.kl.use_loss", "--algo.kl.init_coef", str(m.kl_coef),
        "--algo.kl.estimator", m.kl_estimator,
    ]
    # Any value, 0 included, makes OpenRLHF compute the full-vocabulary entropy of every token.
    if m.entropy_coef:
        flags += ["--actor.entropy_coef", str(m.entropy_coef)]
    if m.dual_clip is not None:
        flags += ["--actor.dual_clip", str(m.dual_clip)]
    return flags


def _ring_flags(run: EnvRun, gpus: int) -> list[str]:
    if run.ring_attn_size == 1:
        return []
    if gpus % run.ring_attn_size:
        raise ValueError(f"{run.env} trains with ring attention over {run.ring_attn_size} GPUs: "
                         f"the GPU count ({gpus}) must be a multiple of it")
    return ["--ds.ring_attn_size", str(run.ring_attn_size), "--ds.packing_samples"]


def openrlhf_args(launch: Launch) -> list[str]:
    """The ``train_ppo_ray`` arguments of ``launch``."""
    c, run, out = TrainConfig(), launch.run, launch.out_dir
    gpus = launch.nodes * launch.gpus_per_node
    samples = c.rollout.n_groups * c.rollout.group_size
    return [
        "--actor.model_name_or_path", launch.model,
        "--train.agent_func_path", str(AGENT_FILE),
        "--data.prompt_dataset", str(out / "tasks" / "train.jsonl"),
        "--eval.dataset", str(out / "tasks" / "eval.jsonl"),
        "--data.input_key", "prompt", "--data.label_key", "label",
        "--data.max_len", str(run.max_len),
        "--actor.num_nodes", str(launch.nodes), "--actor.num_gpus_per_node",
        str(launch.gpus_per_node),
        "--ref.num_nodes", str(launch.nodes), "--ref.num_gpus_per_node", str(launch.gpus_per_node),
        "--vllm.num_engines", str(gpus), "--vllm.tensor_parallel_size", "1",
        "--vllm.gpu_memory_utilization", "0.5", "--vllm.enable_prefix_caching",
        "--train.colocate_all", "--vllm.enable_sleep", "--ds.enable_sleep",
        "--ds.zero_stage", "3", "--ds.param_dtype", "bf16",
        "--actor.gradient_checkpointing_enable",
        *_ring_flags(run, gpus),
        "--rollout.batch_size", str(c.rollout.n_groups),
        "--rollout.n_samples_per_prompt", str(c.rollout.group_size),
        "--train.batch_size", str(samples),
        "--rollout.micro_batch_size", "2", "--train.micro_batch_size", "1",
        "--train.max_epochs", str(c.rl.epochs), "--train.num_episodes", "1",
        "--rollout.temperature", str(c.rollout.temperature),
        "--rollout.top_p", str(c.rollout.top_p),
        "--eval.temperature", str(env_sampling(run.env).temperature),
        "--eval.n_samples_per_prompt", "1",
        "--eval.steps", str(c.eval.every),
        "--algo.advantage.estimator", "group_norm",
        *_method_flags(launch.resolved),
        "--actor.adam.lr", str(c.rl.lr), "--actor.adam.betas", *map(str, c.rl.betas),
        "--actor.adam.eps", str(c.rl.adam_eps),
        "--actor.adam.weight_decay", str(c.rl.weight_decay),
        "--actor.lr_scheduler", "constant", "--actor.lr_warmup_ratio", "0",
        "--actor.max_norm", str(c.rl.grad_clip),
        "--train.seed", str(c.run.seed),
        "--ckpt.output_dir", str(out / "final"), "--ckpt.path", str(out / "checkpoints"),
        "--ckpt.save_steps", str(c.run.checkpoint_every),
        "--ckpt.max_num", str(c.run.keep_checkpoints), "--ckpt.load_enable",
        "--logger.tensorboard_dir", str(out / "tensorboard"),
    ]


def runtime_env(launch: Launch) -> dict[str, Any]:
    """Ray's runtime env of the job: the plug-in's setup hook and the ``ARLARENA_*`` settings."""
    from arlarena_baselines.openrlhf import settings

    c, run = TrainConfig(), launch.run
    env_vars = {
        settings.ENV: run.env,
        settings.HISTORY_LENGTH: "0",
        settings.FORMAT_PENALTY: str(c.rollout.format_penalty),
        settings.MAX_TURNS: str(run.max_turns),
        settings.METHOD: launch.resolved.name,
        settings.STEPS: str(launch.steps),
        settings.EVAL_TOP_P: str(env_sampling(run.env).top_p),
        settings.EVAL_TOP_K: str(env_sampling(run.env).top_k),
    }
    if launch.overrides:
        env_vars[settings.METHOD_OVERRIDES] = json.dumps(launch.overrides)
    if launch.chat_template_kwargs:
        env_vars[settings.CHAT_TEMPLATE_KWARGS] = json.dumps(launch.chat_template_kwargs)
    return {"worker_process_setup_hook": SETUP_HOOK, "env_vars": env_vars}


def submit_command(launch: Launch, extra: Sequence[str] = ()) -> list[str]:
    """``ray job submit ... -- python3 -m openrlhf.cli.train_ppo_ray ...`` for ``launch``."""
    return [
        "ray", "job", "submit", "--address", launch.address,
        "--runtime-env-json", json.dumps(runtime_env(launch)),
        "--", "python3", "-m", "openrlhf.cli.train_ppo_ray", *openrlhf_args(launch), *extra,
    ]


def panel_tasks(
    name: str, env: str, count: int
) -> tuple[list[int], dict[str, Any], dict[str, Any]]:
    """``count`` seeds of panel ``name`` (cycled), its reset options and its record, after
    checking the hashes of the tasks used; a panel on another env than ``env`` is refused."""
    from arlarena_envs.panels import PanelError, check_panel, load_panel

    panel = load_panel(name)
    if panel.spec.env != resolve_env_id(env):
        raise PanelError(f"task panel {name} is on {panel.spec.env}, not {resolve_env_id(env)}")
    check = check_panel(panel, min(count, panel.spec.count))
    print(check.message(), file=sys.stderr)
    seeds = [panel.spec.seeds[i % panel.spec.count] for i in range(count)]
    return seeds, dict(panel.spec.options), check.record()


def run(args: argparse.Namespace, extra: Sequence[str] = ()) -> int:
    """Print (``args.dry_run``) or submit the run of ``arlarena train openrlhf``'s ``args``, with
    ``extra`` OpenRLHF flags; OpenRLHF's own parser checks the command first, in both cases.

    Raises:
        OpenRLHFArgumentError: OpenRLHF's parser or its checks rejected the command.
    """
    from arlarena_baselines.openrlhf.cli import parse_train_args

    launch = Launch(args.env, args.method, args.model, args.nodes, args.gpus_per_node,
                    args.steps, args.out, args.address, args.chat_template_kwargs)
    command = submit_command(launch, extra)
    parse_train_args(command[command.index("openrlhf.cli.train_ppo_ray") + 1 :])
    c, run, tasks = TrainConfig(), launch.run, launch.out_dir / "tasks"
    sets = {"train": (list(range(c.rollout.seed, c.rollout.seed + launch.train_tasks)),
                      run.train_options),
            "eval": (list(range(c.eval.seed, c.eval.seed + c.eval.episodes)), run.eval_options)}
    panels = {}
    for role, name in (("train", args.panel), ("eval", args.eval_panel)):
        if name is not None:
            seeds, options, panels[role] = panel_tasks(name, run.env, len(sets[role][0]))
            sets[role] = (seeds, options)
    if args.dry_run:  # every check above ran, as for the real run
        print(shlex.join(command))
        return 0
    for role, (seeds, options) in sets.items():
        write_tasks(tasks / f"{role}.jsonl", run.env, seeds, options)
    if panels:
        (tasks / "panels.json").write_text(json.dumps(panels, indent=1) + "\n")
    return subprocess.call(command)

