"""The ARLArena envs as OpenRLHF's multi-turn agent: the file for ``--train.agent_func_path``.

OpenRLHF 0.11.2 loads this file by path in every vLLM rollout actor, checks that it defines
``AgentExecutor`` (a subclass of its ``AgentExecutorBase``) and calls
``AgentExecutor().execute(prompt, label, sampling_params, max_length, hf_tokenizer,
llm_engine)`` once per sample. Ours is OpenRLHF's own ``MultiTurnAgentExecutor`` driving one
:class:`ArenaAgentInstance` per episode:

- ``reset``: builds the env with :class:`~arlarena_baselines.rollout.envs.EnvFactory`
  (``gymnasium.make`` + :class:`~wrappers.prompt.PromptWrapper`), resets it with the seed in
  the dataset row's label, and returns the first prompt as a chat user turn (the dataset's
  own prompt text is not used);
- ``step``: the model's turn (after the chat template's prefill, if any) goes to
  ``env.step``; it returns the turn's reward (format
  penalty included; OpenRLHF sums them into the episode return), the next prompt as the next
  user turn, ``done`` (terminated, truncated or ``ARLARENA_MAX_TURNS`` reached), ``scores``
  (the episode's score, else 1/0 for won/lost: what dynamic filtering reads) and
  ``extra_logs`` (:mod:`.turn_logs`: success, valid-format ratio, turns, and with
  ``ARLARENA_METHOD`` set each turn's reward and anchor for the plugin; the turn index is the
  position in those lists).

Settings come from the ``ARLARENA_*`` environment variables (:mod:`.settings`). Env calls run
in a thread, so they do not block the vLLM actor's event loop. The file is loaded by path,
hence absolute imports only.
"""

from __future__ import annotations

import asyncio
import weakref
from functools import partial
from typing import Any

import torch
from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

from arlarena_baselines.openrlhf import turn_logs
from arlarena_baselines.openrlhf.chat_turns import ChatTurns, generation_stop_ids
from arlarena_baselines.openrlhf.settings import AgentSettings, task_from_label
from arlarena_baselines.rollout.episodes import format_valid

__all__ = ["AgentExecutor", "ArenaAgentInstance"]


class ArenaAgentInstance(AgentInstanceBase):
    """One episode of an ARLArena env, in OpenRLHF's ``reset`` / ``step`` protocol."""

    def __init__(self, chat: ChatTurns, settings: AgentSettings) -> None:
        self.chat = chat
        self.settings = settings
        self.env: Any = None
        self.turns: list[tuple[float, str, bool]] = []  # (reward, anchor, valid) per turn
        self.info: dict[str, Any] = {}

    async def reset(self, states: dict, **kwargs: Any) -> dict:
        """Build and reset the env of the task in ``states["label"]``; the first prompt."""
        task = task_from_label(states["label"])
        self.env = await asyncio.to_thread(self.settings.factory)
        weakref.finalize(self, self.env.close)
        prompt, self.info = await asyncio.to_thread(
            self.env.reset, seed=task.seed, options=task.options or None
        )
        return {"observation": self.chat.first(prompt)}

    async def step(self, states: dict, **kwargs: Any) -> dict:
        """Play ``states["action_text"]``; reward, feedback, done, score and logs."""
        anchor = str(self.info.get("anchor", ""))
        prompt, reward, terminated, truncated, self.info = await asyncio.to_thread(
            self.env.step, self.chat.prefill + states["action_text"]
        )
        self.turns.append((float(reward), anchor, format_valid(self.info)))
        limit = self.settings.max_turns
        done = terminated or truncated or (limit is not None and len(self.turns) >= limit)
        won = float(bool(self.info.get("won", False)))
        return {
            "rewards": torch.tensor(float(reward)),
            "scores": torch.tensor(float(self.info.get("score", won))),
            "environment_feedback": "" if done else self.chat.next(prompt),
            "done": done,
            "extra_logs": self.extra_logs(won),
        }

    def extra_logs(self, won: float) -> dict[str, Any]:
        """The episode so far as :mod:`.turn_logs` columns."""
        rewards, anchors, valid = zip(*self.turns, strict=True)
        logs: dict[str, Any] = {
            turn_logs.SUCCESS: won,
            turn_logs.VALID_RATIO: sum(valid) / len(valid),
            turn_logs.TURNS: len(self.turns),
        }
        if self.settings.turn_columns:
            logs[turn_logs.TURN_REWARDS] = list(rewards)
            logs[turn_logs.TURN_ANCHORS] = [turn_logs.anchor_id(a) for a in anchors]
        return logs


class AgentExecutor(MultiTurnAgentExecutor):
    """OpenRLHF's multi-turn executor over :class:`ArenaAgentInstance` episodes.

    OpenRLHF builds each instance without arguments, first thing in ``execute`` (before its
    first ``await``, so concurrent calls cannot mix bindings); each call binds the instance
    class to the chat template of the tokenizer it is given (read once per tokenizer, with
    the model's generation-config stop ids) and to the settings, read once.
    """

    def __init__(self) -> None:
        super().__init__(ArenaAgentInstance)
        self.settings = AgentSettings.from_environ()
        self._chats: dict[int, tuple[Any, ChatTurns]] = {}

    def chat(self, tokenizer: Any) -> ChatTurns:
        """The :class:`ChatTurns` of ``tokenizer`` (built on its first use)."""
        key = id(tokenizer)
        if key not in self._chats or self._chats[key][0] is not tokenizer:
            self._chats[key] = (tokenizer, ChatTurns(tokenizer, generation_stop_ids(tokenizer),
                                                     self.settings.chat_template_kwargs))
        return self._chats[key][1]

    async def execute(
        self,
        prompt: Any,
        label: Any,
        sampling_params: Any,
        max_length: int,
        hf_tokenizer: Any,
        llm_engine: Any,
        images: Any = None,
    ) -> dict:
        """OpenRLHF's multi-turn loop, with episodes bound to ``hf_tokenizer``."""
        self.agent_instance_cls = partial(ArenaAgentInstance, self.chat(hf_tokenizer),
                                          self.settings)
        return await super().execute(
            prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine, images
        )
