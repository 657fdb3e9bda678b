"""Drives episodes of an env with an agent through the wrapper stack, batched across episodes.

:func:`evaluate` runs ``episodes`` tasks × ``samples`` rollouts (all rollouts of a task on the
same env seed), asks the agent for every live episode's response in one batch per turn
(:meth:`Agent.respond <wrappers.agents.base.Agent.respond>`), and writes each turn and each
finished episode to JSONL as it goes (see :mod:`.results`), after the settings record that says
what produced them (:mod:`.settings`) and before what the agent spent (:mod:`.spending`). What an
agent reports per request lands in the records: ``usage`` summed per episode, a debate's
``transcript`` in the turn, and an ``error`` ends that episode only (its record carries the
error; resume retries it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
from tqdm.auto import tqdm

import arlarena_envs
from arlarena_baselines.evaluation.results import ResultsWriter, append_records
from arlarena_baselines.evaluation.settings import open_results, run_settings, settings_record
from arlarena_baselines.evaluation.spending import spend_records
from wrappers.agents.base import Agent, AgentReply, AgentRequest, add_usage
from wrappers.prompt import PromptWrapper

__all__ = ["Episode", "EvalConfig", "episode_id", "evaluate", "make_env"]


@dataclass(frozen=True)
class EvalConfig:
    """What to evaluate on.

    Attributes:
        env: CLI name (``sokoban``) or full gymnasium id.
        episodes: number of tasks; task ``i`` uses env seed ``seed + i``.
        samples: rollouts per task (pass@k needs ``samples >= k``).
        seed: first env seed.
        history_length: (observation, action) pairs shown in the prompt.
        format_penalty: reward lost by a response that fails the format check.
        check, notice: :class:`~wrappers.prompt.PromptWrapper`'s format check (``study``: the
            env's projection in the study; ``strict``: ARLArena's) and not-understood notice.
        batch_size: episodes in flight at once (one agent call per turn covers them all).
        env_kwargs: keyword arguments for ``gymnasium.make``.
        reset_options: ``options`` for every ``reset`` (e.g. ``{"split": "eval"}``).
        record: fields added to every episode record (e.g. ``{"panel": {...}}``: the task
            panel the tasks come from, with its hash).
    """

    env: str = "sokoban"
    episodes: int = 50
    samples: int = 1
    seed: int = 0
    history_length: int = 2
    format_penalty: float = 0.1
    check: str = "study"
    notice: bool = False
    batch_size: int = 16
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    reset_options: dict[str, Any] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)


def make_env(config: EvalConfig) -> gym.Env:
    """``gymnasium.make`` + ``PromptWrapper``: the stack every agent sees."""
    env = gym.make(arlarena_envs.resolve_env_id(config.env), **config.env_kwargs)
    return PromptWrapper(
        env, config.history_length, config.format_penalty, config.check, config.notice
    )


def episode_id(seed: int, sample: int) -> str:
    """Stable id of the ``sample``-th rollout on env seed ``seed`` (what resume matches on)."""
    return f"seed={seed}/sample={sample}"


@dataclass
class Episode:
    """One live episode: its env, latest prompt/info and running totals."""

    env: gym.Env
    seed: int
    sample: int
    prompt: str
    info: dict[str, Any]
    task: str
    turns: int = 0
    valid_turns: int = 0
    total_reward: float = 0.0
    usage: dict[str, float] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return episode_id(self.seed, self.sample)


def _todo(config: EvalConfig, done: set[str]) -> Iterator[tuple[int, int]]:
    for i in range(config.episodes):
        for k in range(config.samples):
            if episode_id(config.seed + i, k) not in done:
                yield config.seed + i, k


def evaluate(
    config: EvalConfig,
    agent: Agent,
    results_path: str | Path,
    *,
    resume: bool = False,
    force: bool = False,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Run the evaluation; return the episode records written by this call.

    With ``resume``, episodes already finished in ``results_path`` are skipped and the turns of
    an interrupted episode are discarded first (episodes that ended with an error are run
    again); a file written under other settings is refused
    (:class:`~.settings.SettingsMismatch`) unless ``force``. Without ``resume``, an existing
    file is an error (so a run never silently mixes with an old one). An error in one reply
    ends that episode with an ``error`` record; an :class:`~wrappers.agents.base.AgentError`
    raised by the agent (endpoint down, request budget spent) propagates after everything
    finished so far, and what the agent spent, has been written.
    """
    results_path = Path(results_path)
    free_envs: list[gym.Env] = [make_env(config)]
    try:
        settings = settings_record(run_settings(config, agent, free_envs[0]))
        done = open_results(results_path, settings, resume=resume, force=force)
    except BaseException:
        free_envs[0].close()
        raise
    extra = {**config.record, "settings": settings["digest"]}
    todo = _todo(config, done)
    total = config.episodes * config.samples
    env_name = arlarena_envs.resolve_env_id(config.env)
    finished: list[dict[str, Any]] = []
    live: list[Episode] = []
    bar = tqdm(total=total, initial=len(done), desc=f"{agent.name} on {env_name}",
               unit="ep", disable=not progress)
    try:
        with ResultsWriter(results_path) as writer:
            while True:
                while len(live) < config.batch_size:
                    nxt = next(todo, None)
                    if nxt is None:
                        break
                    env = free_envs.pop() if free_envs else make_env(config)
                    prompt, info = env.reset(seed=nxt[0], options=config.reset_options or None)
                    live.append(Episode(env, nxt[0], nxt[1], prompt, info, info.get("task", "")))
                if not live:
                    break
                replies = agent.respond(
                    [
                        AgentRequest(e.prompt, e.info, e.env, e.sample, e.id, e.turns)
                        for e in live
                    ]
                )
                still: list[Episode] = []
                for episode, reply in zip(live, replies, strict=True):
                    ended = _step(episode, reply, writer, agent.name, env_name, extra)
                    if ended is None:
                        still.append(episode)
                        continue
                    finished.append(ended)
                    free_envs.append(episode.env)
                    bar.update()
                live = still
    finally:
        bar.close()
        append_records(results_path, spend_records(agent, settings["digest"]))
        for env in free_envs + [e.env for e in live]:
            env.close()
    return finished


def _step(
    episode: Episode, reply: AgentReply, writer: ResultsWriter, agent: str, env: str,
    extra: dict[str, Any],
) -> dict[str, Any] | None:
    """Apply one reply; write the turn; return the episode record if it ended."""
    add_usage(episode.usage, reply.usage)
    if reply.error is not None:
        return _finish(episode, writer, agent, env, episode.info, reply.error, extra)
    prompt, anchor = episode.prompt, episode.info.get("anchor", "")
    obs, reward, terminated, truncated, info = episode.env.step(reply.text)
    episode.turns += 1
    episode.valid_turns += bool(info.get("format_ok"))
    episode.total_reward += reward
    turn = {
        "type": "turn",
        "episode_id": episode.id,
        "agent": agent,
        "env": env,
        "seed": episode.seed,
        "sample": episode.sample,
        "step": episode.turns - 1,
        "prompt": prompt,
        "response": reply.text,
        "parsed_action": info.get("parsed_action"),
        "format_ok": info.get("format_ok"),
        "format_error": info.get("format_error"),
        "format_check": info.get("format_check"),
        "notice": info.get("notice"),
        "action_is_valid": info.get("action_is_valid"),
        "reward": reward,
        "env_reward": info.get("env_reward", reward),
        "anchor": anchor,
        "won": info.get("won", False),
        "terminated": terminated,
        "truncated": truncated,
    }
    if reply.usage:
        turn["usage"] = reply.usage
    if reply.transcript is not None:
        turn["transcript"] = reply.transcript
    writer.write(turn)
    episode.prompt, episode.info = obs, info
    if not (terminated or truncated):
        return None
    return _finish(episode, writer, agent, env, info, None, extra)


def _finish(
    episode: Episode,
    writer: ResultsWriter,
    agent: str,
    env: str,
    info: dict[str, Any],
    error: str | None,
    extra: dict[str, Any],
) -> dict[str, Any]:
    """Write and return the episode record (``error``: why it ended early, else ``None``),
    with the ``extra`` fields of the config's ``record``."""
    won = bool(info.get("won", False)) and error is None
    record = {
        "type": "episode",
        "episode_id": episode.id,
        "agent": agent,
        "env": env,
        "seed": episode.seed,
        "sample": episode.sample,
        "task": episode.task,
        "task_type": info.get("task_type"),
        "dataset": info.get("dataset"),
        "won": won,
        "score": float(info.get("score", float(won))) if error is None else 0.0,
        "return": episode.total_reward,
        "turns": episode.turns,
        "valid_turns": episode.valid_turns,
        "error": error,
    }
    if episode.usage:
        record["usage"] = episode.usage
    record.update(extra)
    writer.write(record)
    return record
