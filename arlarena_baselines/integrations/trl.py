"""ARLArena envs in TRL's ``GRPOTrainer`` (the ``trl`` extra, TRL 1.16): multi-turn episodes
through its ``rollout_func``.

TRL gives a rollout function only the prompts of the batch (each repeated ``num_generations``
times) and the trainer; a GRPO sample is one prompt and one completion. So here:

- each prompt of the dataset (:func:`task_dataset`) *is* its task: the env seed and reset
  options as a :class:`~arlarena_baselines.openrlhf.settings.Task` label, read back by the
  rollout (no table to keep in step with the dataset);
- :class:`ArenaRollout` plays one episode per prompt with the trainer's model through the one
  episode loop (:func:`~arlarena_baselines.rollout.episodes.play`), all episodes of the batch a
  turn at a time, as one growing conversation: the first prompt as the chat's user turn, then
  each response and the env's next prompt as the next user turn
  (:class:`~arlarena_baselines.openrlhf.chat_turns.ChatTurns`, as the OpenRLHF agent does; the
  env's prompts carry no history of their own, ``history_length=0``). :class:`ChatResponder`
  keeps each conversation; the completion is that whole conversation after the first prompt,
  with ``env_mask`` 0 on the env's tokens, so that only the model's tokens are trained;
  ``logprobs`` are the model's at sampling time;
- :func:`episode_return` is the reward function: each episode's return, format penalties
  included, which TRL normalises within the group of a prompt;
- :func:`grpo_settings` turns a method of ``METHODS`` into ``GRPOConfig`` settings where TRL's
  ``loss_type`` and ``importance_sampling_level`` express it (:data:`TRL_METHODS`).

``scripts/trl_grpo.py`` trains with it; ``tests/test_trl.py`` runs a real step on a tiny model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

import torch

from arlarena_baselines.algos import study_method
from arlarena_baselines.openrlhf.chat_turns import ChatTurns, generation_stop_ids
from arlarena_baselines.openrlhf.settings import Task, task_from_label
from arlarena_baselines.rollout.envs import EnvFactory, InProcessEnvPool
from arlarena_baselines.rollout.episodes import Episode, Reply, Start, Turn, play
from arlarena_baselines.rollout.episodes import Task as Group
from arlarena_envs.registration import env_sampling
from wrappers.agents.base import AgentRequest, stream_seed
from wrappers.agents.sampling import SamplingParams, eos_token_ids, generate_batched

__all__ = [
    "TRL_METHODS",
    "ArenaRollout",
    "ChatResponder",
    "episode_return",
    "grpo_settings",
    "task_dataset",
]

TRL_METHODS: dict[str, tuple[str, str]] = {
    "GRPO": ("exact", "loss_type='dapo' (token-mean), importance_sampling_level='token', "
             "delta = the dual clip"),
    "CISPO": ("exact", "loss_type='cispo', importance_sampling_level='token', "
              "epsilon_high = 1 + ε_high (the study's ε_low = 1: no lower bound)"),
    "GRPO_SM": ("near", "as GRPO with off_policy_mask_threshold = δ, which masks the same "
                "sequences, but TRL's token mean still counts their tokens"),
    "CISPO_SM": ("near", "as CISPO with off_policy_mask_threshold = δ (the masked sequences' "
                 "tokens stay in TRL's token mean)"),
    "GRPO_ST": ("near", "loss_type='grpo', importance_sampling_level='token': TRL averages "
                "per episode where ARLArena averages per turn, and its entropy bonus over tokens"),
    "GSPO": ("near", "loss_type='grpo', importance_sampling_level='sequence': one ratio per "
             "episode where ARLArena has one per turn; TRL aggregates the KL as the loss and "
             "the entropy bonus over tokens"),
    "SAPO": ("near", "loss_type='sapo': TRL averages per sequence first, the study's SAPO over "
             "tokens"),
    "SAPO_SM": ("near", "as SAPO, off_policy_mask_threshold = δ"),
    "GiGPO": ("no", "anchor-state step advantages: TRL has one advantage per completion"),
    "EMPG": ("no", "entropy-modulated step advantages: TRL has one advantage per completion"),
    "DAPO_GRPO": ("no", "DAPO's dynamic sampling (resampling groups of equal returns)"),
    "DAPO_GiGPO": ("no", "dynamic sampling and GiGPO's step advantages"),
    "SAMPO": ("no", "dynamic sampling and GiGPO's step advantages"),
}
"""Each method of ``METHODS``: whether TRL's ``GRPOTrainer`` expresses it (``exact``,
``near`` or ``no``) and how, or what it lacks. In every case TRL normalises each episode's
return in its group; ARLArena's GRPO takes the group's statistics over its turns
(``per_trajectory_stats=False``), so longer episodes weigh more there."""


def grpo_settings(method: str, env: str | None = None, *, near: bool = False,
                  near_flag: str = "near=True") -> dict[str, Any]:
    """``GRPOConfig`` keyword arguments for ``method`` at the study's settings on ``env``.

    Raises ``ValueError`` naming what TRL lacks for a method it cannot express (and, unless
    ``near``, for one it expresses only nearly: :data:`TRL_METHODS`); those need ``arlarena
    train rl`` or ``arlarena train openrlhf``. ``near_flag`` is how the caller's user asks for
    ``near`` (a script: ``--near``), which the error names.

    >>> grpo_settings("CISPO")["loss_type"], grpo_settings("CISPO")["epsilon_high"]
    ('cispo', 1.2)
    """
    m = study_method(method, env)
    kind, how = TRL_METHODS[m.name]
    if kind == "no" or (kind == "near" and not near):
        raise ValueError(f"TRL's GRPOTrainer {'cannot express' if kind == 'no' else 'only nears'} "
                         f"{m.name} ({how}); train it with `arlarena train rl` or `arlarena train "
                         "openrlhf`" + (f", or pass {near_flag}" if kind == "near" else ""))
    loss_type = {"cispo": "cispo", "sapo": "sapo"}.get(
        m.clipping, "dapo" if m.aggregation == "token-mean" else "grpo")
    settings: dict[str, Any] = {
        "loss_type": loss_type,
        "importance_sampling_level": "sequence" if m.clipping == "gspo" else "token",
        "epsilon": m.clip_low,
        "epsilon_high": 1.0 + m.clip_high if loss_type == "cispo" else m.clip_high,
        "beta": m.kl_coef,
        "use_bias_correction_kl": False,
        "entropy_coef": m.entropy_coef,
        "scale_rewards": "group" if m.norm_by_std else "none",
    }
    if m.dual_clip is not None:
        settings["delta"] = m.dual_clip
    if loss_type == "sapo":
        settings |= {"sapo_temperature_pos": m.tau_pos, "sapo_temperature_neg": m.tau_neg}
    if m.sequence_mask:
        settings["off_policy_mask_threshold"] = m.delta
    return settings


def task_dataset(seeds: Iterable[int], options: dict[str, Any] | None = None) -> Any:
    """A ``datasets.Dataset`` whose ``prompt`` column names one task per seed."""
    from datasets import Dataset

    return Dataset.from_dict({"prompt": [Task(s, dict(options or {})).label() for s in seeds]})


def episode_return(completions: Sequence[Any], episode_return: Sequence[float],
                   **_: Any) -> list[float]:
    """TRL reward function: the return of each completion's episode (from :class:`ArenaRollout`)."""
    return [float(r) for r in episode_return]


@dataclass
class _Conversation:
    """One episode's chat: its first prompt's ids, then the completion (the model's tokens,
    mask 1, and the env's later prompts, mask 0)."""

    prompt_ids: list[int]
    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    feedback: list[int] | None = None  # the env's next prompt, tokenised, not yet in ``ids``


class ChatResponder:
    """A :class:`~arlarena_baselines.rollout.episodes.Responder` on the trainer's model that
    keeps each episode as one conversation (see the module docs): an episode's first request
    opens it, each later one adds the env's prompt as the next user turn. :meth:`over_budget`
    is the loop's ``stop``: the episode ends when its completion would reach ``budget`` tokens."""

    def __init__(self, model: Any, tokenizer: Any, chat: ChatTurns, sampling: SamplingParams,
                 batch_size: int, budget: int | None) -> None:
        self.model, self.chat, self.sampling = model, chat, sampling
        self.encode = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]
        self.decode = lambda ids: tokenizer.decode(ids, skip_special_tokens=True)
        self.pad_id, self.eos = tokenizer.pad_token_id, eos_token_ids(model, tokenizer)
        self.batch_size, self.budget = batch_size, budget
        self.chats: dict[str, _Conversation] = {}

    def respond(self, requests: Sequence[AgentRequest], seed: int) -> list[Reply]:
        for r in requests:
            if r.turn == 0:
                self.chats[r.episode_id] = _Conversation(self.encode(self.chat.first(r.prompt)))
            else:
                self._add_feedback(self.chats[r.episode_id], r.prompt)
        chats = [self.chats[r.episode_id] for r in requests]
        responses = generate_batched(
            self.model, [c.prompt_ids + c.ids for c in chats], self.sampling,
            [stream_seed(seed, r.episode_id, r.turn) for r in requests],
            batch_size=self.batch_size, pad_id=self.pad_id, eos_ids=self.eos,
        )
        for c, response in zip(chats, responses, strict=True):
            c.ids += response
            c.mask += [1] * len(response)
        return [Reply(self.chat.prefill + self.decode(response)) for response in responses]

    def _add_feedback(self, chat: _Conversation, prompt: str) -> None:
        feedback = chat.feedback if chat.feedback is not None else self.encode(
            self.chat.next(prompt))
        chat.ids += feedback
        chat.mask += [0] * len(feedback)
        chat.feedback = None

    def over_budget(self, episode: Episode, turn: Turn) -> bool:
        """Whether the env's next prompt would take the completion to the budget."""
        if self.budget is None:
            return False
        chat = self.chats[episode.traj_id]
        chat.feedback = self.encode(self.chat.next(episode.prompt))
        return len(chat.ids) + len(chat.feedback) >= self.budget


class ArenaRollout:
    """TRL's ``rollout_func``: one episode of ``env`` per prompt (see the module docs).

    Args:
        env: env CLI name or gymnasium id; ``env_kwargs`` go to ``gymnasium.make``.
        template, format_penalty: :class:`~wrappers.prompt.PromptWrapper`'s (the env's own
            template by default, the study's penalty 0.1).
        max_turns: end episodes after this many turns (default: the env's limit).
        max_new_tokens: tokens per turn (default: the study's budget for the env); an episode
            also ends when its completion reaches ``GRPOConfig.max_completion_length``.
        chat_template_kwargs: keyword arguments of every ``apply_chat_template`` call.
        batch_size: turns generated at once.
        seed: base of every episode's sampling stream (with the step, the task and the copy).

    Sampling follows ``GRPOConfig``'s ``temperature``; top-p and top-k must stay off, since TRL
    differentiates softmax(logits / T).
    """

    def __init__(
        self,
        env: str = "sokoban",
        *,
        env_kwargs: dict[str, Any] | None = None,
        template: str | None = None,
        format_penalty: float = 0.1,
        max_turns: int | None = None,
        max_new_tokens: int | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        batch_size: int = 32,
        seed: int = 0,
    ) -> None:
        self.factory = EnvFactory(env, dict(env_kwargs or {}), history_length=0,
                                  format_penalty=format_penalty, template=template)
        self.max_turns = max_turns
        self.max_new_tokens = max_new_tokens or env_sampling(env).max_tokens
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.batch_size, self.seed = batch_size, seed

    def __call__(self, prompts: Sequence[str], trainer: Any) -> dict[str, list[Any]]:
        args, tokenizer = trainer.args, trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        sampling = SamplingParams(args.temperature, args.top_p, args.top_k or 0,
                                  self.max_new_tokens)
        if sampling.truncated or sampling.temperature <= 0:
            raise ValueError("TRL differentiates softmax(logits / T): sample with a temperature "
                             "> 0 and without top-p / top-k (top_p=1.0, top_k=0)")
        chat = ChatTurns(tokenizer, generation_stop_ids(tokenizer), self.chat_template_kwargs)
        responder = ChatResponder(model, tokenizer, chat, sampling, self.batch_size,
                                  args.max_completion_length)
        copies: Counter[str] = Counter()
        starts: list[tuple[dict[str, Any], Start]] = []  # each episode: its reset options, start
        for label in prompts:
            copies[label] += 1
            task = task_from_label(label)
            name = f"step={trainer.state.global_step}/{label}/{copies[label]}"
            starts.append((task.options, Start(Group(label, task.seed), copies[label], name)))
        finished = _Finished()
        pool = InProcessEnvPool(self.factory, len(starts))
        try:
            with torch.no_grad():
                # One play per set of reset options (the loop resets with one); a task's seed
                # and each episode's sampling stream are its own, so the grouping changes nothing.
                def options(item: tuple[dict[str, Any], Start]) -> str:
                    return repr(sorted(item[0].items()))

                for _, group in groupby(sorted(starts, key=options), options):
                    items = list(group)
                    play(pool, responder, [start for _, start in items], [finished],
                         seed=self.seed, max_turns=self.max_turns,
                         reset_options=dict(items[0][0]) or None, stop=responder.over_budget)
                played = [(finished.episodes[s.id], responder.chats[s.id]) for _, s in starts]
                logprobs = [self._logprobs(model, c, sampling.temperature) for _, c in played]
        finally:
            pool.close()
        return {
            "prompt_ids": [c.prompt_ids for _, c in played],
            "completion_ids": [c.ids for _, c in played],
            "logprobs": logprobs,
            "env_mask": [c.mask for _, c in played],
            "episode_return": [e.episode_return for e, _ in played],
            "won": [float(bool(e.info.get("won", False))) for e, _ in played],
            "valid_format": [e.valid_turns / max(e.turns, 1) for e, _ in played],
        }

    @staticmethod
    def _logprobs(model: Any, chat: _Conversation, temperature: float) -> list[float]:
        """log softmax(logits / T) of each completion token: the sampling distribution."""
        device = next(model.parameters()).device
        ids = torch.tensor([chat.prompt_ids + chat.ids], device=device)
        logits = model(input_ids=ids).logits[0, len(chat.prompt_ids) - 1 : -1].float()
        tokens = torch.tensor(chat.ids, device=device).unsqueeze(-1)
        return torch.log_softmax(logits / temperature, -1).gather(-1, tokens)[:, 0].tolist()


class _Finished:
    """The loop's consumer that keeps each finished episode by its id."""

    def __init__(self) -> None:
        self.episodes: dict[str, Episode] = {}

    def turn(self, episode: Episode, turn: Turn) -> None:
        pass

    def finish(self, episode: Episode) -> None:
        self.episodes[episode.traj_id] = episode
