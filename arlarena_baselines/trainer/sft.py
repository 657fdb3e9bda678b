"""Behaviour cloning: an agent's good trajectories become (prompt, response) training pairs.

Holds :func:`collect_demonstrations` (run any registered agent, e.g. the expert, through the
training wrapper stack and write every turn and episode to JSONL), :func:`load_demonstrations`
(keep the turns of episodes scoring at least ``min_score``; reads that JSONL or what
``arlarena eval`` writes), :class:`SFTTrainer` and :func:`train_sft`. Optionally every
response is rewritten from its action (``sft.response_template``) for shorter responses.

The loss is the mean cross-entropy of the response tokens (the end-of-turn token included);
prompt tokens carry no loss. The prompt is chat-formatted exactly as in RL rollouts, so the
checkpoint starts RL (``--model RUN/final``) on the prompts it was cloned on.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.rollout import (
    AgentResponder,
    InProcessEnvPool,
    Task,
    collect,
    format_valid,
    make_env_pool,
    pack_pairs,
)
from arlarena_baselines.trainer.checkpoint import (
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from arlarena_baselines.trainer.config import TrainConfig, config_to_dict
from arlarena_baselines.trainer.envs import training_options
from arlarena_baselines.trainer.heldout import evaluate_policy
from arlarena_baselines.trainer.policy import Policy, env_factory
from arlarena_baselines.trainer.runs import TorchThreads, prepare_run_dir, seed_everything
from arlarena_baselines.trainer.tracking import MetricsLogger
from wrappers.agents import check_agent_env, make_agent
from wrappers.agents.chat import ChatFormat
from wrappers.agents.scripted import planned_response
from wrappers.format import parse_response

__all__ = ["SFTTrainer", "collect_demonstrations", "load_demonstrations", "train_sft"]

DEMONSTRATIONS = "demonstrations.jsonl"


def collect_demonstrations(
    config: TrainConfig, path: str | Path, *, progress: bool = False
) -> list[dict[str, Any]]:
    """Run ``config.sft.agent`` on ``config.sft.episodes`` tasks; write and return the records.

    The agent sees the training wrapper stack (``config.rollout``: template, history, format
    penalty, turn cut), in-process, so privileged agents (the expert) can read their env. An
    episode whose request failed (an API agent's ``error``) ends there; its record keeps the
    error and :func:`load_demonstrations` leaves it out.
    """
    s = config.sft
    check_agent_env(s.agent, config.rollout.env, config.rollout.env_kwargs)
    agent = make_agent(s.agent, **{"seed": config.run.seed, **s.agent_kwargs})
    tasks = [Task(f"sft{i}", s.seed + i) for i in range(s.episodes)]
    width = max(1, min(s.episodes, config.rollout.n_groups * config.rollout.group_size))
    with InProcessEnvPool(env_factory(config), width) as pool:
        rollout = collect(
            pool,
            AgentResponder(agent),
            tasks,
            1,
            max_turns=config.rollout.max_turns,
            reset_options=training_options(config) or None,
            seed=config.run.seed,
            progress=progress,
            desc=f"collect {s.agent}",
        )
    agent.close()
    records: list[dict[str, Any]] = [
        {
            "type": "turn",
            "episode_id": t.traj_id,
            "step": t.step,
            "prompt": t.prompt,
            "response": t.response,
            "format_ok": t.valid,
            "reward": t.reward,
        }
        for t in rollout.samples
    ]
    records += [
        {
            "type": "episode",
            "episode_id": e.traj_id,
            "seed": e.seed,
            "won": e.won,
            "score": e.score,
            "return": e.episode_return,
            "turns": e.turns,
            "error": e.error,
        }
        for e in rollout.episodes
    ]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return records


def load_demonstrations(
    records: str | Path | list[dict[str, Any]], min_score: float
) -> list[tuple[str, str]]:
    """(prompt, response) pairs of the format-valid turns of episodes scoring >= ``min_score``.

    ``records`` is a JSONL path or its records: ``turn`` records with ``episode_id``,
    ``prompt``, ``response`` (and ``format_ok``), ``episode`` records with ``episode_id`` and
    ``score`` (or ``won``) — what :func:`collect_demonstrations` and ``arlarena eval`` write.
    """
    if not isinstance(records, list):
        lines = Path(records).read_text().splitlines()
        records = [json.loads(line) for line in lines if line.strip()]
    scores = {
        r["episode_id"]: float(r.get("score", float(bool(r.get("won")))))
        for r in records
        if r.get("type") == "episode" and not r.get("error")
    }
    return [
        (r["prompt"], r["response"])
        for r in records
        if r.get("type") == "turn"
        and format_valid(r)
        and scores.get(r["episode_id"], -math.inf) >= min_score
    ]


class SFTTrainer:
    """Fine-tunes ``config.model`` on demonstrations (collected, or read from
    ``config.sft.data``); resumable like the RL trainer."""

    def __init__(self, config: TrainConfig, *, resume: bool = False) -> None:
        self.config = config
        s = config.sft
        self.run_dir = prepare_run_dir(config, "sft", resume)
        self.threads = TorchThreads(config.run.threads)
        seed_everything(config.run.seed)
        self.pairs = self._demonstrations(resume)
        if not self.pairs:
            raise ValueError(
                f"no demonstration reaches min_score={s.min_score}: collect more episodes "
                "or lower sft.min_score"
            )
        self.policy = Policy.load(config)
        chat = ChatFormat(self.policy.tokenizer, config.model.chat_template_kwargs)
        self.examples = [(chat.prompt_ids(p), chat.response_ids(r)) for p, r in self.pairs]
        self.steps_per_epoch = math.ceil(len(self.examples) / s.batch_size)
        self.total_steps = s.epochs * self.steps_per_epoch
        self.optimizer = torch.optim.AdamW(
            self.policy.model.parameters(), lr=s.lr, weight_decay=s.weight_decay
        )
        warmup = max(1, int(s.warmup_ratio * self.total_steps))

        def schedule(step: int) -> float:
            if step < warmup:
                return (step + 1) / warmup
            progress = (step - warmup) / max(1, self.total_steps - warmup)
            return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))

        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, schedule)
        self.step = 0
        checkpoint = latest_checkpoint(self.run_dir) if resume else None
        if checkpoint is not None:
            state = load_checkpoint(checkpoint, self.policy.model, self.optimizer)
            self.step = state["step"]
            self.scheduler.load_state_dict(state["scheduler"])
        r = config.rollout
        width = max(1, min(config.eval.episodes, r.n_groups * r.group_size))
        self.pool = make_env_pool(env_factory(config), width, config.rollout.env_workers)
        self.logger = MetricsLogger(
            self.run_dir,
            "sft",
            # Resuming with no checkpoint starts over: every earlier record is redone.
            resume_step=self.step + 1 if checkpoint is not None else (0 if resume else None),
            tensorboard=config.run.tensorboard,
            wandb=config.run.wandb,
            wandb_project=config.run.wandb_project,
            wandb_config=config_to_dict(config),
        )

    def _demonstrations(self, resume: bool) -> list[tuple[str, str]]:
        s = self.config.sft
        path = Path(s.data) if s.data is not None else self.run_dir / DEMONSTRATIONS
        if s.data is None and not (resume and path.exists()):
            collect_demonstrations(self.config, path, progress=self.config.run.progress)
        pairs = load_demonstrations(path, s.min_score)
        if s.plan_labels:
            pairs = [(p, planned_response(r)) for p, r in pairs]
        if s.response_template is None:
            return pairs
        return [(p, s.response_template.format(action=parse_response(r).action)) for p, r in pairs]

    def batch(self, step: int) -> list[int]:
        """Example indices of ``step``: a fresh permutation each epoch, seeded by the epoch."""
        epoch, position = divmod(step, self.steps_per_epoch)
        order = np.random.default_rng([self.config.run.seed, epoch]).permutation(len(self.examples))
        size = self.config.sft.batch_size
        return order[position * size : (position + 1) * size].tolist()

    def train_step(self, step: int) -> dict[str, float]:
        """One optimizer step of mean response-token cross-entropy."""
        model = self.policy.model
        model.train()
        self.optimizer.zero_grad(set_to_none=True)
        index = self.batch(step)
        micro = self.config.sft.micro_batch_size
        total = sum(len(self.examples[i][1]) for i in index)
        loss_sum = 0.0
        for start in range(0, len(index), micro):
            chunk = [self.examples[i] for i in index[start : start + micro]]
            batch = pack_pairs([p for p, _ in chunk], [r for _, r in chunk], self.policy.pad_id)
            log_prob, _ = self.policy.log_probs(batch)
            mask = batch.response_mask.to(log_prob.device)
            nll = -(log_prob * mask).sum()
            (nll / total).backward()
            loss_sum += float(nll.detach())
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), self.config.sft.grad_clip)
        lr = self.scheduler.get_last_lr()[0]
        self.optimizer.step()
        self.scheduler.step()
        return {mn.SFT_LOSS: loss_sum / total, mn.SFT_LR: lr,
                mn.GRAD_NORM: float(grad_norm)}

    def evaluate(self) -> dict[str, float]:
        self.policy.sync()  # an engine backend samples from the weights trained so far
        return evaluate_policy(self.policy, self.config, self.pool, logger=self.logger,
                               step=self.step, progress=self.config.run.progress)

    def train(self) -> list[dict[str, Any]]:
        """Run the remaining steps, evaluating and checkpointing on schedule; save
        ``run_dir/final``; return the records logged by this call."""
        c = self.config
        records = []
        evaluating = c.eval.episodes > 0
        if self.step == 0 and c.eval.at_start and evaluating:
            records.append(self.logger.log(0, self.evaluate()))
        bar = tqdm(total=self.total_steps, initial=self.step, desc="SFT", unit="step",
                   disable=not c.run.progress)
        try:
            while self.step < self.total_steps:
                metrics = self.train_step(self.step)
                self.step += 1
                last = self.step == self.total_steps
                if evaluating and (last or (c.eval.every > 0 and self.step % c.eval.every == 0)):
                    metrics |= self.evaluate()
                records.append(self.logger.log(self.step, metrics))
                every = c.run.checkpoint_every
                if last or (every > 0 and self.step % every == 0):
                    save_checkpoint(
                        self.run_dir, self.step, self.policy.model, self.policy.tokenizer,
                        self.optimizer, {"scheduler": self.scheduler.state_dict(),
                                         "config": config_to_dict(c)},
                        keep=c.run.keep_checkpoints,
                    )
                bar.update()
                bar.set_postfix(loss=f"{metrics[mn.SFT_LOSS]:.3f}")
            self.policy.save(self.run_dir / "final")
        finally:
            bar.close()
        return records

    def close(self) -> None:
        self.logger.close()
        self.pool.close()
        self.policy.close()
        self.threads.restore()


def train_sft(config: TrainConfig, *, resume: bool = False) -> list[dict[str, Any]]:
    """Build an :class:`SFTTrainer`, run it, close it; return the records logged."""
    trainer = SFTTrainer(config, resume=resume)
    try:
        return trainer.train()
    finally:
        trainer.close()
