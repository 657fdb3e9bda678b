"""The trainer's configuration: one documented dataclass per phase, loadable from YAML.

Holds :class:`ModelConfig`, :class:`RolloutConfig`, :class:`EvalConfig` (periodic held-out
evaluation), :class:`SFTConfig` (behaviour cloning), :class:`RLConfig`, :class:`RunConfig`
(output, logging, checkpoints) and :class:`TrainConfig` grouping them as sections, plus
:func:`load_config` (YAML file + ``section.field=value`` overrides), :func:`apply_overrides`,
:func:`split_override`, :func:`config_to_dict`, :func:`iter_fields` (what the CLI turns into
``--section.field`` flags) and :func:`method_config_yaml` (the per-method files under
``configs/rl/``).

Defaults reproduce the study's agent-run settings (16 groups × 8 rollouts, history of 2,
train T = 1.0, the env's response budget and evaluation sampling, lr 1e-6, one update
epoch); the method's own hyperparameters (ε, KL β, entropy bonus, …) come from
:data:`~arlarena_baselines.algos.METHODS` and are changed with ``rl.method_overrides``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml

from arlarena_baselines.bounds import Bounded, bounded
from arlarena_baselines.rollout.envs import EnvFactory

__all__ = [
    "EvalConfig",
    "ModelConfig",
    "RLConfig",
    "RolloutConfig",
    "RunConfig",
    "SFTConfig",
    "TrainConfig",
    "apply_overrides",
    "config_from_dict",
    "config_to_dict",
    "iter_fields",
    "load_config",
    "method_config_yaml",
    "parse_value",
    "split_override",
]


@dataclass
class ModelConfig(Bounded):
    """The policy model.

    Attributes:
        name: ``smollm2`` (the embedded SmolLM2-135M-Instruct, the CPU default), ``tiny`` (a
            randomly initialised Llama with the SmolLM2 tokenizer, sized by the fields below),
            or any Hugging Face causal-LM path or id (e.g. a Qwen3-4B directory on a GPU, or a
            checkpoint written by ``arlarena train``).
        dtype: ``auto`` (bf16 autocast where the hardware has it, i.e. a CUDA GPU with bf16;
            float32 elsewhere), ``float32`` or ``bfloat16``.
        device: ``auto`` (CUDA if available), ``cpu`` or ``cuda``.
        hidden_size, num_layers, num_heads, intermediate_size: the ``tiny`` model's shape
            (head_dim = hidden_size / num_heads must be >= 32 for vLLM's CPU attention).
        init_seed: seed of the ``tiny`` model's random initialisation.
        gradient_checkpointing: trade compute for memory (large models).
        chat_template_kwargs: keyword arguments of every ``apply_chat_template`` call (Qwen3:
            ``{enable_thinking: false}``); a reply opening the template prefills (``<think>``)
            is put before the generated text for the format check, never into the trained
            response tokens.
        task_vocab: keep only the token ids the rollout task's prompts and responses use
            (:func:`~arlarena_baselines.trainer.vocab.task_vocabulary`; about 100 for compact
            Sokoban): the ``tiny`` model is built over them, a checkpoint trained on the full
            vocabulary has its embedding and LM head cut to them once at load. Saved with the
            checkpoint, so its evaluation applies it too. For models trained from scratch:
            refused for the embedded SmolLM2 (pretrained models keep their vocabulary).
    """

    prefix: ClassVar[str] = "model."
    name: str = "smollm2"
    dtype: str = "auto"
    device: str = "auto"
    hidden_size: int = bounded(64, ge=1)
    num_layers: int = bounded(2, ge=1)
    num_heads: int = bounded(2, ge=1)
    intermediate_size: int = bounded(256, ge=1)
    init_seed: int = bounded(0, ge=0)
    gradient_checkpointing: bool = False
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    task_vocab: bool = False


@dataclass(frozen=True)
class RolloutConfig(EnvFactory):
    """How training rollouts are collected: the env stack, then the rollouts' own settings.

    The env-stack settings (``env``, ``env_kwargs``, ``history_length``, ``format_penalty``,
    ``template``, ``format_check``, ``notice``) are :class:`EnvFactory`'s fields, documented
    there and inherited, so they are declared once and stay flat YAML keys of this section
    (``rollout.history_length``); :attr:`stack` is their value. Frozen, as its base must be
    (the other sections are not; a config changes by ``replace``, as
    :func:`config_from_dict` does).

    Attributes:
        reset_options: ``options`` for every training ``reset``, over the env's training split
            (:func:`~arlarena_envs.registration.env_splits`: Sokoban ``{split: train}``, which
            never shows a held-out level).
        max_turns: cut episodes after this many turns (``null``: the env's own limit).
        n_groups: tasks (env seeds) per training step; each is one group.
        group_size: rollouts per task (G), all on the task's seed.
        max_new_tokens: response budget per turn (``null``: the study's for the env, e.g. 512
            on ALFWorld and WebShop, 500 on Sokoban; see
            :func:`arlarena_envs.registration.env_sampling`).
        temperature, top_p, top_k: training sampling (the study: T = 1.0, no top-p / top-k;
            RL refuses truncated sampling, see :func:`~.sampling.training_sampling`).
        backend: generation backend: ``hf`` (our KV-cache decode loop), ``vllm`` (a vLLM
            engine that gets the weights after each update; ``pip install 'arlarena[vllm]'``)
            or any name added with
            :func:`~arlarena_baselines.rollout.generation.register_backend`.
        gen_batch_size: prompts per generation call.
        prefix_caching: reuse the KV of the prompt prefix that prompts share (the preamble,
            earlier turns) within a policy version, and run the prefix a batch of the scoring,
            reference and update forward passes shares once; it changes only speed (and
            float rounding).
        sampler_log_probs: take the rollouts' old log-probs and entropies from the sampler
            where they are exact (the ``hf`` backend, float32, the training sampling) instead
            of a separate forward pass; they agree within float rounding
            (``tests/test_sampling.py``).
        env_workers: env worker processes (0 = step envs in the trainer's process), or
            ``ray`` / ``ray:N``: Ray actors, one per CPU of the Ray cluster or N
            (``pip install 'arlarena[openrlhf]'``).
        seed: base of the training tasks' env seeds.
        num_tasks: draw each step's tasks from the fixed pool of env seeds ``seed`` ..
            ``seed + num_tasks - 1`` (shuffled, distinct within a step while the pool
            allows); ``null``: a fresh seed for every group. A small pool shows whether a
            method can fit the tasks it trains on.
    """

    prefix: ClassVar[str] = "rollout."
    reset_options: dict[str, Any] = field(default_factory=dict)
    max_turns: int | None = bounded(None, ge=1)
    n_groups: int = bounded(16, ge=1)
    group_size: int = bounded(8, ge=1)
    max_new_tokens: int | None = bounded(None, ge=1)
    temperature: float = bounded(1.0, ge=0)
    top_p: float = bounded(1.0, gt=0, le=1)
    top_k: int = bounded(0, ge=0)
    backend: str = "hf"
    gen_batch_size: int = bounded(64, ge=1)
    prefix_caching: bool = True
    sampler_log_probs: bool = True
    env_workers: int | str = 0
    seed: int = bounded(0, ge=0)
    num_tasks: int | None = bounded(None, ge=1)

    @property
    def stack(self) -> EnvFactory:
        """The env-stack settings of this section (``env`` … ``notice``) as one value, the
        one an evaluation holds (:class:`~arlarena_baselines.rollout.envs.EnvFactory`)."""
        return EnvFactory.of(self)


@dataclass
class EvalConfig(Bounded):
    """Periodic evaluation on held-out tasks (never used for training).

    Attributes:
        every: evaluate every this many steps (0 = only at the start and the end).
        episodes: held-out tasks, one rollout each; task ``i`` uses seed ``seed + i``.
        seed: first held-out seed.
        reset_options: ``options`` of the held-out resets (``null``: the env's held-out split,
            which shares no content with the tasks training draws: Sokoban ``{split: eval}``,
            ALFWorld ``{split: eval_out_of_distribution}``, WebShop ``{split: eval}``, TIR Math
            ``{split: gen_eval}``; see :func:`~arlarena_envs.registration.env_splits`).
            Every held-out result records which tasks it played.
        temperature, top_p, top_k: evaluation sampling (``null``: the study's for the env,
            e.g. T 0.6 / top-p 0.95 / top-k 20 on ALFWorld and WebShop, T 0.4 on Sokoban).
        max_new_tokens: response budget (``null``: the rollout's).
        at_start: evaluate before the first step too (the starting checkpoint's figure).
        width: held-out episodes played at once: an evaluation plays in its own env pool this
            wide (at most its episode count) where that is wider than the rollout's pool
            (``null``: the rollout's). It changes speed, not episodes: fewer waves, and prompts
            of every length sorted into like-length generation chunks, less padding
            (ALFWorld's prompts vary with their admissible actions; ``bench/chunking.py``).
    """

    prefix: ClassVar[str] = "eval."
    every: int = bounded(10, ge=0)
    episodes: int = bounded(32, ge=0)
    seed: int = bounded(1_000_000, ge=0)
    reset_options: dict[str, Any] | None = None
    temperature: float | None = bounded(None, ge=0)
    top_p: float | None = bounded(None, gt=0, le=1)
    top_k: int | None = bounded(None, ge=0)
    max_new_tokens: int | None = bounded(None, ge=1)
    at_start: bool = True
    width: int | None = bounded(None, ge=1)


@dataclass
class SFTConfig(Bounded):
    """Behaviour cloning: collect an agent's trajectories, keep the good ones, fine-tune.

    Attributes:
        agent: the registered agent whose trajectories are cloned (``expert``, ``random``, …).
        agent_kwargs: options for the agent (e.g. ``{"model": "..."}`` for ``hf``).
        data: a JSONL of turns and episodes to clone instead of collecting (what ``arlarena
            eval`` or an earlier ``arlarena train sft`` wrote).
        episodes: tasks to collect; task ``i`` uses env seed ``seed + i``.
        seed: first collection seed.
        min_score: keep only episodes whose score (``info["score"]``, else won) reaches this.
        response_template: rewrite every cloned response as this template of its action
            (``{action}``), e.g. ``<think>{action}</think><action>{action}</action>``: shorter
            responses for small CPU runs (``null`` keeps the agent's own words).
        plan_labels: clone a noisy expert's plan at every turn, not the random moves it took
            (:func:`~wrappers.agents.scripted.planned_response`): noise in the states the
            demonstrations visit, not in their labels (DART).
        epochs, batch_size, lr, weight_decay, warmup_ratio, grad_clip: the optimisation (AdamW,
            linear warm-up then cosine decay); the loss is the mean cross-entropy of the
            response tokens only.
        micro_batch_size: examples per forward/backward (gradient accumulation).
    """

    prefix: ClassVar[str] = "sft."
    agent: str = "expert"
    agent_kwargs: dict[str, Any] = field(default_factory=dict)
    data: str | None = None
    episodes: int = bounded(200, ge=1)
    seed: int = bounded(500_000, ge=0)
    min_score: float = 1.0
    response_template: str | None = None
    plan_labels: bool = False
    epochs: int = bounded(3, ge=1)
    batch_size: int = bounded(16, ge=1)
    lr: float = bounded(1e-4, gt=0)
    weight_decay: float = bounded(0.0, ge=0)
    warmup_ratio: float = bounded(0.05, ge=0, le=1)
    grad_clip: float = bounded(1.0, gt=0)
    micro_batch_size: int = bounded(16, ge=1)


@dataclass
class RLConfig(Bounded):
    """The RL phase.

    Attributes:
        method: a name of :data:`~arlarena_baselines.algos.METHODS` (case-insensitive).
        method_overrides: changes to the method's hyperparameters (any
            :class:`~arlarena_baselines.algos.Method` field: ``kl_coef``, ``clip_high``,
            ``cold_start_steps``, ``entropy_coef``, …).
        steps: training steps (each: roll out, filter, compute advantages, update).
        lr, weight_decay, betas, adam_eps: AdamW (constant learning rate after any warm-up,
            as the study).
            Tiny models over a large vocabulary want a larger ``adam_eps`` (e.g. 1e-5, as
            CleanRL's PPO): with 1e-8, Adam scales the near-zero gradients of the thousands of
            tokens the policy never samples up to full-size steps, and their logits drift.
        mini_batch_size: step samples per update mini-batch (verl's ``ppo_mini_batch_size``
            times the rollouts per task): each step's batch is shuffled and split into chunks
            of this many step samples, one optimizer step each, so later chunks are
            off-policy: their importance ratios leave 1 and clipping binds (the study's
            staleness knob). ``null``: one update per rollout batch (always on-policy). The
            study's Sokoban runs use 512 (64 x 8) against 32 tasks x 8 rollouts, two step
            samples per episode; the default keeps that ratio for 16 x 8. Its ALFWorld runs
            use 2048 (256 x 8) against 16 x 8 episodes of up to 50 turns.
        mini_batches: instead of a size, cut each step's batch into this many update
            mini-batches of near-equal size (the arena's staleness axis: the number of
            updates per rollout batch, whatever the episodes' lengths); ``null``: by
            ``mini_batch_size``.
        warmup_steps: linear learning-rate warm-up over the first this many steps (0: the
            study's constant rate from the start).
        epochs: passes over the rollout batch.
        micro_batch_size: step samples per forward/backward (gradient accumulation).
        grad_clip: max gradient norm.
        reference_kl: keep the frozen starting policy π_ref even without a KL term, to log
            the k3 KL to it and its shares over the 8 token groups of the study's Figure 3
            (one more forward pass a step; the loss is unchanged). With ``kl_coef > 0`` they
            are logged anyway.
    """

    prefix: ClassVar[str] = "rl."
    method: str = "SAMPO"
    method_overrides: dict[str, Any] = field(default_factory=dict)
    steps: int = bounded(100, ge=1)
    lr: float = bounded(1e-6, gt=0)
    weight_decay: float = bounded(0.0, ge=0)
    betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = bounded(1e-8, gt=0)
    mini_batch_size: int | None = bounded(256, ge=1)
    mini_batches: int | None = bounded(None, ge=1)
    warmup_steps: int = bounded(0, ge=0)
    epochs: int = bounded(1, ge=1)
    micro_batch_size: int = bounded(16, ge=1)
    grad_clip: float = bounded(1.0, gt=0)
    reference_kl: bool = False


@dataclass
class RunConfig(Bounded):
    """Output, logging and checkpoints.

    Attributes:
        out: the run directory (metrics, checkpoints, final model, plots).
        seed: seed of Python's, NumPy's and torch's RNGs and of the generation calls.
        checkpoint_every: write a resumable checkpoint every this many steps (0 = at the end
            only); checkpoints are written atomically.
        keep_checkpoints: how many recent checkpoints to keep.
        tensorboard: also log to TensorBoard (``pip install tensorboard``).
        wandb: also log to Weights & Biases (``pip install wandb``); ``wandb_project`` names
            the project.
        progress: show progress bars.
        threads: torch CPU threads during the run; 0 (the default) chooses them by
            :func:`~arlarena_baselines.trainer.runs.auto_threads`: half the cores, at
            least 1. A thread more than the free cores decodes several times slower
            (measured by ``bench/trainer.py``).
    """

    prefix: ClassVar[str] = "run."
    out: str = "runs/default"
    seed: int = bounded(0, ge=0)
    checkpoint_every: int = bounded(10, ge=0)
    keep_checkpoints: int = bounded(2, ge=1)
    tensorboard: bool = True
    wandb: bool = False
    wandb_project: str = "arlarena"
    progress: bool = True
    threads: int = bounded(0, ge=0)


@dataclass
class TrainConfig:
    """Every section of a training run (YAML: one mapping per section)."""

    model: ModelConfig = field(default_factory=ModelConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)
    rl: RLConfig = field(default_factory=RLConfig)
    run: RunConfig = field(default_factory=RunConfig)


def iter_fields(config: TrainConfig | None = None) -> Iterator[tuple[str, dataclasses.Field, Any]]:
    """``(section, field, current value)`` for every field of every section."""
    config = config or TrainConfig()
    for section in dataclasses.fields(config):
        part = getattr(config, section.name)
        for f in dataclasses.fields(part):
            yield section.name, f, getattr(part, f.name)


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def coerce(value: Any, annotation: Any, where: str) -> Any:
    """``value`` converted to ``annotation`` (int, float, bool, str, tuples, dicts, optionals);
    strings are parsed as YAML first, so ``"1e-6"``, ``"null"`` and ``"{a: 1}"`` work."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if value is None or (isinstance(value, str) and value.strip().lower() in ("null", "none")):
            if type(None) in args:
                return None
        inner = [a for a in args if a is not type(None)]
        for alternative in inner[:-1]:  # the first alternative that takes the value
            try:
                return coerce(value, alternative, where)
            except ValueError:
                pass
        return coerce(value, inner[-1], where)
    if isinstance(value, str) and annotation is not str:
        value = yaml.safe_load(value) if value.strip() else value
    try:
        if annotation is bool:
            if isinstance(value, bool):
                return value
            raise TypeError
        if annotation is int:
            if isinstance(value, bool) or float(value) != int(float(value)):
                raise TypeError
            return int(float(value))
        if annotation is float:
            if isinstance(value, bool):
                raise TypeError
            return float(value)
        if annotation is str:
            return str(value)
        if origin is tuple:
            items = list(value)
            if len(items) != len(args):
                raise TypeError
            return tuple(coerce(v, a, where) for v, a in zip(items, args, strict=True))
        if origin is dict:
            if not isinstance(value, dict):
                raise TypeError
            return dict(value)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: cannot use {value!r} as {annotation}") from err
    return value


def config_from_dict(data: dict[str, Any] | None, base: TrainConfig | None = None) -> TrainConfig:
    """A :class:`TrainConfig` from nested ``{section: {field: value}}`` over ``base``.

    An unknown section or field raises a ``ValueError`` naming the known ones, a value out of
    its field's bounds (:func:`~arlarena_baselines.bounds.bounded`) one naming the bounds.
    """
    config = dataclasses.replace(base) if base is not None else TrainConfig()
    sections = {f.name: f for f in dataclasses.fields(TrainConfig)}
    for name, values in (data or {}).items():
        if name not in sections:
            raise ValueError(f"unknown config section {name!r}; known: {', '.join(sections)}")
        if not isinstance(values, dict):
            raise ValueError(f"config section {name!r} must be a mapping, got {values!r}")
        part = getattr(config, name)
        hints = _hints(type(part))
        changes = {}
        for key, value in values.items():
            if key not in hints:
                raise ValueError(
                    f"unknown field {name}.{key}; known: {', '.join(sorted(hints))}"
                )
            changes[key] = coerce(value, hints[key], f"{name}.{key}")
        setattr(config, name, dataclasses.replace(part, **changes))
    return config


def parse_value(text: str) -> Any:
    """A ``--set`` value: YAML, where numbers in exponent form without a dot (``5e-2``, which
    YAML 1.1 reads as a string) are numbers too.

    >>> parse_value("5e-2"), parse_value("3"), parse_value("{a: 1}"), parse_value("up")
    (0.05, 3, {'a': 1}, 'up')
    """
    if not text.strip():
        return text
    value = yaml.safe_load(text)
    if isinstance(value, str):
        try:
            return float(value) if value.strip().lower() not in ("nan", "inf", "-inf") else value
        except ValueError:
            return value
    return value


def split_override(item: str) -> tuple[str, str, list[str], str]:
    """``"rl.method_overrides.kl_coef=0.05"`` → ``("rl", "method_overrides", ["kl_coef"],
    "0.05")``; a ``ValueError`` for anything not shaped ``section.field[.key]=value``."""
    key, sep, value = item.partition("=")
    parts = key.strip().split(".")
    if not sep or len(parts) < 2:
        raise ValueError(f"override {item!r} must look like section.field=value")
    section, name, *sub = parts
    return section, name, sub, value


def apply_overrides(config: TrainConfig, overrides: Sequence[str]) -> TrainConfig:
    """Apply ``section.field=value`` strings (values parsed as YAML, then typed).

    ``rl.method_overrides.kl_coef=0.05`` sets one key of a dict field.

    >>> c = apply_overrides(TrainConfig(), ["rl.lr=1e-5", "rollout.max_turns=null"])
    >>> c.rl.lr, c.rollout.max_turns
    (1e-05, None)
    >>> apply_overrides(c, ["rl.method_overrides.kl_coef=0.05"]).rl.method_overrides
    {'kl_coef': 0.05}
    """
    for item in overrides:
        section, name, sub, value = split_override(item)
        if sub:
            current = dict(getattr(getattr(config, section, None), name, None) or {})
            node = current
            for part in sub[:-1]:
                node = node.setdefault(part, {})
            node[sub[-1]] = parse_value(value)
            config = config_from_dict({section: {name: current}}, config)
        else:
            config = config_from_dict({section: {name: value}}, config)
    return config


def load_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> TrainConfig:
    """Defaults, then the YAML file at ``path`` (if any), then ``overrides``."""
    data = {}
    if path is not None:
        data = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a config file must be a mapping of sections")
    return apply_overrides(config_from_dict(data), overrides)


def config_to_dict(config: TrainConfig) -> dict[str, Any]:
    """The config as plain nested dicts (tuples become lists), ready for YAML or JSON."""

    def plain(value: Any) -> Any:
        if isinstance(value, tuple):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value

    return {
        section: {k: plain(v) for k, v in dataclasses.asdict(getattr(config, section)).items()}
        for section in (f.name for f in dataclasses.fields(config))
    }


def method_config_yaml(name: str, env: str | None = None) -> str:
    """The YAML of ``configs/rl/<name>.yaml`` (``env`` None: the study's ALFWorld settings,
    also used for the envs it has no script for) or ``configs/rl/<env>/<name>.yaml``: the
    method and the hyperparameters it reads, at the study's settings on that env
    (:func:`~arlarena_baselines.algos.study_method`).

    The study's defaults for everything else come from the dataclasses; edit a copy or
    override on the command line (``--set rl.method_overrides.kl_coef=0.05``).
    """
    from arlarena_baselines.algos import method_fields, study_method

    method = study_method(name, env)
    overrides = {k: getattr(method, k) for k in method_fields(method)}
    body = yaml.safe_dump(
        {"rl": {"method": method.name, "method_overrides": overrides}}, sort_keys=False
    )
    path = f"configs/rl/{env + '/' if env else ''}{method.name}.yaml"
    head = (
        f"# {method.name}: {method.summary}\n"
        f"# The study's settings on {env or 'ALFWorld (and the envs it has no script for)'}"
        " (arlarena_baselines/algos/study.py);\n"
        f"# aggregation {method.aggregation}, clipping {method.clipping}, advantage "
        f"{method.advantage}, filter {method.filtering or 'none'}"
        f"{', sequence mask' if method.sequence_mask else ''}.\n"
        "# Generated by method_config_yaml(); run with\n"
        f"#   arlarena train rl --config {path} --env {env or 'sokoban'} --model ...\n"
    )
    return head + body
