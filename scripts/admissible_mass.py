"""How much of a model's probability goes to the admissible actions its prompt lists.

A defect check for behaviour cloning on ALFWorld: a student that answers with actions of other
rooms (a receptacle the room does not have, an object that is not there) has not learnt to copy
from the prompt's list. For prompts of the ``alfworld_compact`` template read from a results
file or a BC run's ``demonstrations.jsonl``, this scores every listed action teacher-forced in
the recipe's response form (``sft.response_template``) and prints the mean and median of their
summed probability (1.0: the model never answers outside the list) and the mean probability
of its favourite listed action. Example::

    python scripts/admissible_mass.py runs/learn-alfworld-bc/final \\
        runs/learn-alfworld-bc/demonstrations.jsonl --prompts 120
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
from pathlib import Path

import torch

from arlarena_baselines.rollout.forward import pack_pairs
from arlarena_baselines.trainer.config import load_config
from arlarena_baselines.trainer.policy import Policy
from wrappers.agents.chat import ChatFormat

_LISTED = re.compile(r"\nAdmissible actions: \[(.*)\]\. Answer as")


def listed_actions(prompt: str) -> list[str]:
    """The admissible actions an ``alfworld_compact`` prompt lists.

    >>> listed_actions("Task: x\\nAdmissible actions: [go to desk 1, look]. Answer as <think>")
    ['go to desk 1', 'look']
    """
    match = _LISTED.search(prompt)
    if match is None:
        raise ValueError("not an alfworld_compact prompt: no 'Admissible actions: [...]' line")
    return match.group(1).split(", ")


def admissible_mass(policy: Policy, prompt: str, response_template: str,
                    actions: list[str] | None = None) -> tuple[float, float]:
    """``(summed, top)`` probability of ``actions`` (default: the prompt's listed ones) as
    whole responses to ``prompt``, scored in one left-padded batch."""
    chat = ChatFormat(policy.tokenizer, policy.chat_template_kwargs)
    responses = [chat.response_ids(response_template.format(action=a))
                 for a in (listed_actions(prompt) if actions is None else actions)]
    batch = pack_pairs([chat.prompt_ids(prompt)] * len(responses), responses, policy.pad_id)
    with torch.no_grad():
        log_probs, _ = policy.log_probs(batch)
    probs = (log_probs * batch.response_mask).sum(-1).double().exp()  # long answers: tiny
    return float(probs.sum()), float(probs.max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a model folder (e.g. a BC run's final)")
    parser.add_argument("records", help="JSONL with turn records that carry a prompt")
    parser.add_argument("--config", default="configs/recipe/alfworld-rl.yaml")
    parser.add_argument("--response-template", default="<think></think><action>{action}</action>")
    parser.add_argument("--prompts", type=int, default=120, help="prompts drawn (seed 0)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    policy = Policy.load(load_config(args.config, [f"model.name={args.model}"]))
    policy.model.eval()
    with Path(args.records).open(encoding="utf-8") as handle:
        prompts = [r["prompt"] for r in map(json.loads, handle) if r.get("type") == "turn"]
    random.Random(0).shuffle(prompts)
    pairs = [admissible_mass(policy, p, args.response_template) for p in prompts[:args.prompts]]
    summed, top = [s for s, _ in pairs], [t for _, t in pairs]
    print(json.dumps({"prompts": len(pairs), "mean": statistics.mean(summed),
                      "median": statistics.median(summed), "top_mean": statistics.mean(top)}))


if __name__ == "__main__":
    main()
