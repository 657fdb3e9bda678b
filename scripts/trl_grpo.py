"""Train on an ARLArena env with TRL's GRPOTrainer (the `trl` extra): a method TRL expresses,
multi-turn episodes through arlarena_baselines.integrations.trl.

    python scripts/trl_grpo.py --env sokoban --method GRPO --model runs/learn-bc/final --steps 50

The default model is a tiny random Llama (saved under --out first) so that the script runs in
minutes on a CPU; give a Hugging Face path or id for real runs (on a GPU, add --bf16). The
default run (the tiny model, 2 steps) peaks at 6.1 GB of memory (maximum resident set size
under `/usr/bin/time -v`; 4.5 min on 2 shared CPU cores).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="sokoban", help="env CLI name or gymnasium id")
    p.add_argument("--method", default="GRPO", help="GRPO, CISPO, GRPO_SM, CISPO_SM "
                   "(--near also: GRPO_ST, GSPO, SAPO, SAPO_SM)")
    p.add_argument("--near", action="store_true", help="accept a method TRL only nears")
    p.add_argument("--model", default="tiny", help="'tiny' or a Hugging Face path or id")
    p.add_argument("--template", default=None, help="prompt template (e.g. sokoban_compact)")
    p.add_argument("--tasks", type=int, default=64, help="training tasks: env seeds 0..N-1")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--generations", type=int, default=4, help="episodes per task (G)")
    p.add_argument("--batch", type=int, default=8, help="episodes per step")
    p.add_argument("--max-turns", type=int, default=None)
    p.add_argument("--max-new-tokens", type=int, default=None, help="tokens per turn")
    p.add_argument("--max-completion-length", type=int, default=1024,
                   help="tokens of a whole episode after its first prompt")
    p.add_argument("--lr", type=float, default=1e-6)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--out", default="runs/trl")
    a = p.parse_args()

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in TRL
    from arlarena_baselines.integrations.trl import (
        ArenaRollout,
        episode_return,
        grpo_settings,
        task_dataset,
    )

    try:  # before any model is built: a method TRL cannot express is a one-line error
        settings = grpo_settings(a.method, a.env, near=a.near, near_flag="--near")
    except (KeyError, ValueError) as error:
        p.error(str(error).strip("'\""))
    from trl import GRPOConfig, GRPOTrainer

    model = a.model
    if model == "tiny":  # TRL loads its reference model from a path: save the tiny model first
        from arlarena_baselines.trainer.config import ModelConfig
        from arlarena_baselines.trainer.models import save_model, smollm2_tokenizer, tiny_model

        tokenizer = smollm2_tokenizer()
        model = str(save_model(tiny_model(ModelConfig(name="tiny"), tokenizer), tokenizer,
                               Path(a.out) / "tiny"))
    config = GRPOConfig(
        output_dir=a.out, max_steps=a.steps, per_device_train_batch_size=a.batch,
        num_generations=a.generations, max_completion_length=a.max_completion_length,
        learning_rate=a.lr, logging_steps=1, save_strategy="no", report_to="none",
        bf16=a.bf16, use_cpu=not a.bf16, gradient_checkpointing=False,
        **settings,
    )
    rollout = ArenaRollout(a.env, template=a.template, max_turns=a.max_turns,
                           max_new_tokens=a.max_new_tokens)
    trainer = GRPOTrainer(model=model, reward_funcs=episode_return, args=config,
                          train_dataset=task_dataset(range(a.tasks)), rollout_func=rollout)
    trainer.train()
    trainer.save_model(str(Path(a.out) / "final"))


if __name__ == "__main__":
    main()
