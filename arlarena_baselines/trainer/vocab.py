"""The task vocabulary of a run: the token ids its rollout task's texts can use.

Holds :func:`task_vocabulary`, which gathers them from the task's own episodes (a model trained
from scratch with ``model.task_vocab``; see :mod:`wrappers.agents.vocab` for why).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arlarena_baselines.rollout import AgentResponder, InProcessEnvPool, Task, collect
from arlarena_baselines.rollout.episodes import Reply
from arlarena_baselines.trainer.config import TrainConfig
from arlarena_baselines.trainer.envs import env_factory, training_options
from wrappers.agents import make_agent
from wrappers.agents.chat import ChatFormat
from wrappers.agents.vocab import TaskVocabulary

__all__ = ["task_vocabulary"]

_FORMAT_TAGS = "<think></think><action></action>"
UNPARSABLE_TURNS = 2
"""Turns of each task answered by :class:`_Unparsable` (the env's reply to an invalid move
shows in the second turn's prompt)."""


class _Unparsable:
    """Answers every request with an empty response, which every format check rejects: the
    gathering meets the env's reply to an invalid move (ALFWorld's "Nothing happens."), which
    the expert and the random agent, both playing admissible actions, never see."""

    def respond(self, requests: Sequence[Any], seed: int) -> list[Reply]:
        return [Reply("") for _ in requests]


def task_vocabulary(config: TrainConfig, tokenizer: Any, levels: int = 256) -> TaskVocabulary:
    """The ids of ``config.rollout``'s chat-formatted prompts and of every response that
    names an admissible action, over ``levels`` tasks played by the expert and by a random
    agent (seeds ``rollout.seed`` on; deterministic), plus the prompts that follow an
    unparsable response (:class:`_Unparsable`) and the tokenizer's special tokens.

    Responses are ``sft.response_template`` of each admissible action where it is set, else
    the agents' own, and the strict format's tags; so behaviour cloning and RL find every id
    they need. Prompts of tasks the gathering never met can still hold an unseen id (it
    encodes as the unknown token, with a warning): ``levels`` sets the coverage.
    """
    r, template = config.rollout, config.sft.response_template
    chat = ChatFormat(tokenizer, dict(config.model.chat_template_kwargs))
    rows: list[list[int]] = [chat.response_ids(_FORMAT_TAGS)]
    # (responder, turns a task, whether its responses join the vocabulary)
    players = [(AgentResponder(make_agent("expert", seed=config.run.seed)), r.max_turns, True),
               (AgentResponder(make_agent("random", seed=config.run.seed)), r.max_turns, True),
               (_Unparsable(), UNPARSABLE_TURNS, False)]
    for responder, max_turns, keep_responses in players:
        tasks = [Task(f"vocab{i}", r.seed + i) for i in range(levels)]
        with InProcessEnvPool(env_factory(config), min(levels, 64)) as pool:
            rollout = collect(pool, responder, tasks, 1, max_turns=max_turns,
                              reset_options=training_options(config) or None, seed=config.run.seed)
        rows += [chat.prompt_ids(p) for p in sorted({s.prompt for s in rollout.samples})]
        if not keep_responses:
            continue
        if template is None:
            responses = {s.response for s in rollout.samples}
        else:
            actions = {s.action for s in rollout.samples if s.action}
            actions |= {a for e in rollout.episodes for a in e.info.get("admissible_actions", [])}
            responses = {template.format(action=a) for a in actions}
        rows += [chat.response_ids(text) for text in sorted(responses)]
    special = [i for i in (tokenizer.eos_token_id, tokenizer.pad_token_id,
                           tokenizer.bos_token_id) if i is not None]
    unk = tokenizer.unk_token_id if tokenizer.unk_token_id is not None else special[0]
    return TaskVocabulary.gather(
        rows, special, unk,
        source=f"{r.env} template={r.template} history={r.history_length} levels={levels}",
    )
