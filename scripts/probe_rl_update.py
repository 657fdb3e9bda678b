"""Probe what a few RL updates do to a Sokoban policy, split by which samples carry the signal.

Collects one training batch with an ``arlarena train rl`` config, computes the method's
advantages, then, starting each time from the same weights and optimizer state, runs
``--updates`` policy updates on that batch with the advantages of each variant:

- ``all``: as the trainer does;
- ``positive only`` / ``negative only``: the other sign set to 0;
- ``malformed zeroed``: 0 for responses that fail the strict format check;
- ``shuffled``: the same values, randomly reassigned (noise with the same scale);
- ``oracle``: +1 where the executed move is on a shortest solution from its state, else -1 (the
  signal a perfect critic would give).

It also prints the cosine between each variant's first update direction (the negative batch
gradient, before Adam) and the direction that lowers the expert's NLL on the held-out states:
whether a batch's gradient points where held-out play improves at all. With ``--batches K``
it also sums the directions of K batches of new levels.

It first prints how many turns of lost episodes get a positive advantage (and their share of
the batch's positive advantage). After each variant it prints, on the expert's states of
held-out levels (responses written with ``--response-template``), the entropy of π at the
token where the move is first named (the decision) and at the executed one in ``<action>`` (a
copy when the template names the move twice), the expert's NLL and π's move accuracy at the
decision, and the mean entropy over all response tokens. Example (the ``make learn`` recipe's
checkpoint)::

    python scripts/probe_rl_update.py --config configs/recipe/sokoban-rl.yaml \\
        --model runs/learn-bc/final --lr 1e-4 --updates 3
"""

from __future__ import annotations

import argparse
import copy
import itertools
import tempfile
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

from arlarena_baselines.rollout import Rollout, StepSample, encode_prompt, pack_pairs
from arlarena_baselines.rollout.forward import PackedBatch
from arlarena_baselines.trainer.config import load_config
from arlarena_baselines.trainer.policy import env_factory
from arlarena_baselines.trainer.rl import RLTrainer
from wrappers.agents.chat import encode_response

MOVES = ("up", "down", "left", "right")


def expert_states(trainer: RLTrainer, template: str, levels: int, seed: int):
    """The expert's (prompt, response) pairs on ``levels`` held-out levels, packed; the response
    columns of the first move token (where the move is decided) and of the executed one (in
    ``<action>``; the same column when the template names the move once); the moves' ids."""
    tok, max_turns = trainer.policy.tokenizer, trainer.config.rollout.max_turns
    moves = [tok(m, add_special_tokens=False)["input_ids"] for m in MOVES]
    if any(len(ids) != 1 for ids in moves):
        raise ValueError(f"the probe needs one token per move; the tokenizer gives {moves}")
    env = env_factory(trainer.config)()
    prompts, responses = [], []
    for i in range(levels):
        obs, _ = env.reset(seed=seed + i)
        for turn in itertools.count(1):
            response = template.format(action=env.unwrapped.expert_action())
            prompts.append(encode_prompt(tok, obs))
            responses.append(encode_response(tok, response))
            obs, _, terminated, truncated, _ = env.step(response)
            if terminated or truncated or turn == max_turns:
                break
    env.close()
    # Columns located in one formatted response: every move is one token, so they hold for all.
    sample = template.format(action=MOVES[0])
    offsets = tok(sample, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    decided = template.index("{action}")  # the first move starts where the first field was
    executed = sample.index("<action>") + len("<action>")
    columns = tuple(next(i for i, (a, _) in enumerate(offsets) if a >= at)
                    for at in (decided, executed))
    return pack_pairs(prompts, responses, trainer.policy.pad_id), columns, [m[0] for m in moves]


def probe_chunks(model: torch.nn.Module, probe: PackedBatch, chunk: int = 64):
    """Per chunk of the probe's rows: its row indices, each row's first response column (rows
    are right-aligned), the logits over the response columns and their labels. Gradients flow
    unless the caller holds ``torch.no_grad``."""
    width, length = probe.width, probe.input_ids.shape[1]
    keep = torch.arange(length - width - 1, length - 1)
    for start in range(0, probe.input_ids.shape[0], chunk):
        part = PackedBatch(*(t[start : start + chunk] for t in (
            probe.input_ids, probe.attention_mask, probe.position_ids, probe.response_mask)))
        logits = model(input_ids=part.input_ids, attention_mask=part.attention_mask,
                       position_ids=part.position_ids, logits_to_keep=keep,
                       use_cache=False).logits.float()
        yield (part, torch.arange(part.input_ids.shape[0]),
               width - part.response_mask.sum(-1).long(), logits, part.input_ids[:, -width:])


def measure(model: torch.nn.Module, probe: PackedBatch, columns: tuple[int, int],
            moves: list[int]) -> dict:
    """Entropy at the deciding and the executed move token, the expert's NLL at the deciding
    one, the mean response entropy, and how often π's likeliest move is the expert's."""
    model.eval()
    decided, executed, nll, entropies, correct = [], [], [], [], []
    with torch.no_grad():
        for part, rows, first, logits, labels in probe_chunks(model, probe):
            at, run = first + columns[0], first + columns[1]
            log_p = torch.log_softmax(logits, -1)
            entropy = -(log_p.exp() * log_p).sum(-1)
            decided.append(entropy[rows, at])
            executed.append(entropy[rows, run])
            nll.append(-log_p[rows, at, labels[rows, at]])
            entropies.append(entropy[part.response_mask.bool()])
            best = torch.tensor(moves)[logits[rows, at][:, moves].argmax(-1)]
            correct.append((best == labels[rows, at]).float())
    return {
        "entropy@decided": float(torch.cat(decided).mean()),
        "entropy@executed": float(torch.cat(executed).mean()),
        "expert nll@decided": float(torch.cat(nll).mean()),
        "entropy(all)": float(torch.cat(entropies).mean()),
        "move accuracy": float(torch.cat(correct).mean()),
    }


def variants(advantages: Tensor, batch: list[StepSample]) -> dict[str, Callable[[], Tensor]]:
    valid = torch.tensor([s.valid for s in batch])
    shuffle = torch.randperm(len(advantages), generator=torch.Generator().manual_seed(0))
    return {
        "all": lambda: advantages,
        "positive only": lambda: advantages.clamp_min(0),
        "negative only": lambda: advantages.clamp_max(0),
        "malformed zeroed": lambda: torch.where(valid, advantages, 0.0),
        "shuffled": lambda: advantages[shuffle],
    }


def oracle_advantages(trainer: RLTrainer, batch: list[StepSample]) -> Tensor:
    """+1 for a turn whose executed move starts a shortest solution of its state, else -1
    (trajectories replayed from their level's seed; tasks of step 0, round 0)."""
    env, r = env_factory(trainer.config)(), trainer.config.rollout
    turns: dict[str, list[int]] = {}
    for i, s in enumerate(batch):
        turns.setdefault(s.traj_id, []).append(i)
    signs = torch.full((len(batch),), -1.0)
    for indices in turns.values():
        indices.sort(key=lambda i: batch[i].step)
        env.reset(seed=r.seed + int(batch[indices[0]].group_id.rsplit("g", 1)[1]))
        for i in indices:
            plan = env.unwrapped.shortest_solution()
            if plan is not None and batch[i].action:
                trial = copy.deepcopy(env.unwrapped)
                won = trial.step(batch[i].action)[4]["won"]
                after = trial.shortest_solution()
                if won or (after is not None and len(after) == len(plan) - 1):
                    signs[i] = 1.0
            env.step(batch[i].response)
    env.close()
    return signs


class _GradientCapture:
    """Stands in for the trainer's optimizer: records the clipped batch gradient, steps nothing."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model, self.gradient = model, None

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.model.zero_grad(set_to_none=set_to_none)

    def step(self) -> None:
        self.gradient = _flat_gradient(self.model)


def _flat_gradient(model: torch.nn.Module) -> Tensor:
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten()
                      for p in model.parameters()])


def heldout_direction(model: torch.nn.Module, probe: PackedBatch,
                      columns: tuple[int, int]) -> Tensor:
    """The negative gradient of the expert's mean NLL at the deciding token of the probe."""
    model.zero_grad(set_to_none=True)
    for _, rows, first, logits, labels in probe_chunks(model, probe):
        at = first + columns[0]
        nll = -torch.log_softmax(logits[rows, at], -1)[rows, labels[rows, at]]
        (nll.sum() / probe.input_ids.shape[0]).backward()
    direction = -_flat_gradient(model)
    model.zero_grad(set_to_none=True)
    return direction


def update_direction(trainer: RLTrainer, batch: list[StepSample], advantages: Tensor,
                     reference: list[list[float]] | None) -> Tensor:
    """The first update's direction on ``batch`` with ``advantages`` (no step taken)."""
    optimizer, capture = trainer.optimizer, _GradientCapture(trainer.policy.model)
    trainer.optimizer = capture
    try:
        trainer.update(batch, advantages, reference, [], [])
    finally:
        trainer.optimizer = optimizer
    return -capture.gradient


def summed(trainer: RLTrainer, batch: list[StepSample], advantages: Tensor,
           reference: list[list[float]] | None, toward: Tensor, batches: int) -> None:
    """Print each batch's and the running sum's cosine with ``toward`` over ``batches``
    batches of new levels (the first is ``batch``), each direction normalised: does the signal
    add up while the noise averages out?"""
    total = torch.zeros_like(toward)
    for round_ in range(batches):
        if round_:
            batch = trainer.rollout(0, round_).samples
            advantages = trainer.advantages(batch)
            reference = trainer.reference_log_probs(batch)
        direction = update_direction(trainer, batch, advantages, reference)
        total += direction / direction.norm()
        one, together = (float(torch.nn.functional.cosine_similarity(d, toward, dim=0))
                         for d in (direction, total))
        print(f"batch {round_ + 1}: cos(update, held-out) {one:+.3f}, of the sum of "
              f"{round_ + 1}: {together:+.3f}", flush=True)


def lost_but_reinforced(rollout: Rollout, advantages: Tensor) -> str:
    """How much positive advantage lands on turns of lost episodes (e.g. a format penalty
    separating rollouts that all failed, scaled up by the group's std)."""
    won = {e.traj_id: e.won for e in rollout.episodes}
    lost = torch.tensor([not won[s.traj_id] for s in rollout.samples])
    positive = advantages > 0
    share = float(advantages[positive & lost].sum() / advantages[positive].sum().clamp_min(1e-12))
    return (f"lost-episode turns with A > 0: {int((positive & lost).sum())} of {int(lost.sum())}, "
            f"{share:.1%} of the batch's positive advantage")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/recipe/sokoban-rl.yaml")
    parser.add_argument("--model", required=True, help="checkpoint to probe")
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--updates", type=int, default=3, help="updates on the batch per variant")
    parser.add_argument("--n-groups", type=int, default=16)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--levels", type=int, default=60, help="held-out levels for the probe")
    parser.add_argument("--seed", type=int, default=2_000_000, help="first held-out level")
    parser.add_argument("--response-template",
                        default="<think>{action}</think><action>{action}</action>")
    parser.add_argument("--batches", type=int, default=1,
                        help="batches of new levels whose update directions are summed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        config = load_config(args.config, [
            f"model.name={args.model}", f"run.out={out}", f"rl.lr={args.lr}",
            f"rollout.n_groups={args.n_groups}", f"rollout.group_size={args.group_size}",
            "run.tensorboard=false", "run.progress=false",
        ])
        trainer = RLTrainer(config)
        try:
            probe, columns, moves = expert_states(trainer, args.response_template, args.levels,
                                                 args.seed)
            rollout = trainer.rollout(0, 0)
            batch = rollout.samples
            advantages = trainer.advantages(batch)
            reference = trainer.reference_log_probs(batch)
            weights = copy.deepcopy(trainer.policy.model.state_dict())
            optimizer = copy.deepcopy(trainer.optimizer.state_dict())
            print(f"batch: {len(batch)} step samples, valid format "
                  f"{np.mean([s.valid for s in batch]):.3f}; probe: {probe.input_ids.shape[0]} "
                  f"expert states")
            print(lost_but_reinforced(rollout, advantages))
            oracle = oracle_advantages(trainer, batch)
            corr = torch.corrcoef(torch.stack([advantages.float(), oracle]))[0, 1]
            print(f"moves on a shortest solution: {float((oracle > 0).float().mean()):.3f}; "
                  f"corr(advantage, oracle) {float(corr):+.3f}")
            toward = heldout_direction(trainer.policy.model, probe, columns)
            made = {**variants(advantages, batch), "oracle": lambda: oracle}
            cosine = {name: float(torch.nn.functional.cosine_similarity(
                update_direction(trainer, batch, make(), reference), toward, dim=0))
                for name, make in made.items()}
            summed(trainer, batch, advantages, reference, toward, args.batches)
            rows = {"checkpoint": measure(trainer.policy.model, probe, columns, moves)}
            for name, make in made.items():
                trainer.policy.model.load_state_dict(weights)
                trainer.optimizer.load_state_dict(optimizer)
                for _ in range(args.updates):
                    trainer.update(batch, make(), reference, [], [])
                rows[name] = measure(trainer.policy.model, probe, columns, moves)
        finally:
            trainer.close()
    keys = list(rows["checkpoint"])
    print("| advantages | " + " | ".join(keys) + " | cos(update, held-out) |")
    print("|---" * (len(keys) + 2) + "|")
    for name, row in rows.items():
        print(f"| {name} | " + " | ".join(f"{row[k]:.3f}" for k in keys)
              + (f" | {cosine[name]:+.3f} |" if name in cosine else " | |"))


if __name__ == "__main__":
    main()
