"""Time loss + backward of every method against a plain PPO-clip token-mean loss.

Run ``python bench/algos.py`` (``--batch``, ``--tokens``, ``--repeats``, ``--threads``). Every
method sees the same random (batch × tokens) inputs: log-probs drifted from the old ones,
ragged response lengths and a rollout of ``batch`` step samples (groups of 8, 4-turn
trajectories, repeated anchors, turn entropies) from which it computes its advantages. The
timed call is ``compute_advantages`` + ``method_policy_loss`` + ``backward``; the baseline
is the textbook PPO-clip surrogate written inline, with GRPO advantages given. The table
prints the fastest call over seven interleaved rounds and its ratio to the baseline. With one torch
thread (the default) it measures CPU time (``time.process_time``), which barely moves with
the load of a shared machine; with more threads, wall-clock time.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

from arlarena_baselines.algos import METHODS, compute_advantages, method_policy_loss

ROUNDS = 7


def make_inputs(batch: int, tokens: int, seed: int = 0) -> dict:
    """Random policy tensors and a matching rollout of ``batch`` step samples."""
    gen = torch.Generator().manual_seed(seed)
    old = -torch.rand(batch, tokens, generator=gen) * 3.0
    new = (old + 0.05 * torch.randn(batch, tokens, generator=gen)).requires_grad_()
    lengths = torch.randint(tokens // 2, tokens + 1, (batch,), generator=gen)
    mask = (torch.arange(tokens) < lengths.unsqueeze(-1)).float()
    turns, group_size = 4, 8
    traj = torch.arange(batch) // turns
    steps = torch.arange(batch) % turns
    groups = traj // group_size
    scores = torch.rand(traj.max().item() + 1, generator=gen).round()[traj]
    rollout = {
        "episode_scores": scores,
        "group_ids": groups,
        "traj_ids": traj,
        "steps": steps,
        "step_rewards": torch.rand(batch, generator=gen),
        "anchors": [
            f"room {int(g)} state {int(s) % 2}" for g, s in zip(groups, steps, strict=True)
        ],
        "entropies": torch.rand(batch, generator=gen),
    }
    return {"new": new, "old": old, "mask": mask, "rollout": rollout}


def baseline_step(inputs: dict) -> None:
    """Textbook PPO-clip token-mean loss + backward (advantages precomputed outside)."""
    adv = inputs["adv"].unsqueeze(-1)
    ratio = (inputs["new"] - inputs["old"]).clamp(-20, 20).exp()
    loss = torch.maximum(-adv * ratio, -adv * ratio.clamp(0.8, 1.2))
    mask = inputs["mask"]
    ((loss * mask).sum() / mask.sum()).backward()


def method_step(name: str) -> Callable[[dict], None]:
    method = METHODS[name]

    def step(inputs: dict) -> None:
        adv = compute_advantages(method, **inputs["rollout"])
        loss, _ = method_policy_loss(method, inputs["new"], inputs["old"], adv, inputs["mask"])
        loss.backward()

    return step


def best_seconds(
    fn: Callable[[dict], None], inputs: dict, repeats: int, clock: Callable[[], float]
) -> float:
    """The fastest of ``repeats`` timed calls after a short warm-up (as ``timeit`` advises)."""
    times = []
    for i in range(repeats + 3):
        inputs["new"].grad = None
        start = clock()
        fn(inputs)
        if i >= 3:
            times.append(clock() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    # CPU time is robust to other load, but idle OpenMP workers spin: use it for one thread.
    clock, unit = (time.process_time, "CPU ms") if args.threads == 1 else (time.perf_counter, "ms")
    inputs = make_inputs(args.batch, args.tokens)
    inputs["adv"] = compute_advantages("GRPO", **inputs["rollout"])
    # Interleave rounds so slow drift of the machine hits every entry alike.
    names = ["baseline", *METHODS]
    steps = {"baseline": baseline_step, **{n: method_step(n) for n in METHODS}}
    samples: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(ROUNDS):
        for name in names:
            samples[name].append(best_seconds(steps[name], inputs, args.repeats, clock))
    base = min(samples["baseline"])
    print(
        f"loss + backward, {args.batch} x {args.tokens} tokens, "
        f"{torch.get_num_threads()} thread(s), best of {ROUNDS} x {args.repeats} calls"
    )
    print(f"| {'method':<12} | {unit:>8} | {'ratio':>6} |")
    print(f"|{'-' * 14}|{'-' * 10}|{'-' * 8}|")
    for name in names:
        best = min(samples[name])
        print(f"| {name:<12} | {best * 1e3:8.2f} | {best / base:6.2f} |")


if __name__ == "__main__":
    main()
