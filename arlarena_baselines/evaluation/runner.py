"""Evaluation's side of the episode loop: results files, and :func:`evaluate`.

:class:`ResultsLog`, a consumer of :func:`~arlarena_baselines.rollout.episodes.play`, writes
each turn and finished episode to a results file as they come (:mod:`.results`), after the
settings record of what produced them (:mod:`.settings`), holding the file's lock
(:mod:`.lock`: a second writer is refused at once), and knows the episodes the file has
finished (the resume plan). :func:`evaluate` plays an :class:`~.config.EvalConfig`'s episodes
with an agent into one, ``batch_size`` in flight, and writes what the agent spends as it spends
it (:mod:`.spending`: every attempt before it is sent); the trainer's held-out evaluation and
``arlarena train compare`` write theirs through a :class:`ResultsLog` too. A reply's ``usage``
is summed per episode, what the server said of it (``facts``: finish reason, served model)
and a debate's ``transcript`` kept in the turn, and an ``error`` ends that episode only
(resume retries it). An interrupt (``KeyboardInterrupt``) first lets the requests in flight
arrive, so their replies are cached and counted, then propagates.
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from contextlib import ExitStack
from itertools import count
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

import arlarena_envs
from arlarena_baselines.evaluation.config import EvalConfig
from arlarena_baselines.evaluation.lock import held, lock_path
from arlarena_baselines.evaluation.results import ResultsWriter, still_to_play
from arlarena_baselines.evaluation.settings import open_results, run_settings, settings_record
from arlarena_baselines.evaluation.spending import spend_records
from arlarena_baselines.rollout.episodes import AgentResponder, Episode, Turn, play
from arlarena_baselines.rollout.pools import make_env_pool
from wrappers.agents.base import Agent

__all__ = ["ResultsLog", "evaluate"]

_CHECKED = ("parsed_action", "format_ok", "format_error", "format_check", "notice",
            "action_is_valid")
"""What the wrapper stack's ``info`` says of a reply, kept in its turn record."""


class ResultsLog(ResultsWriter):
    """Writes the turns and episodes of a run to the results file ``path`` as they are played.

    Opening takes the file's lock (:func:`~.lock.held`; another writer holding it:
    :class:`~.lock.FileBusy`, before anything is read or written), removes the file with
    ``overwrite``, checks it against the run's settings (``config``'s, and ``agent``'s: the
    settings of what answers, labelled ``name`` in the records) and prepares it
    (:func:`~.settings.open_results`, with ``resume`` and ``force``); :attr:`done` then holds
    the ids of the episodes it has finished. :attr:`records` are the episode records written.
    """

    def __init__(
        self, path: str | Path, config: EvalConfig, name: str, agent: dict[str, Any], *,
        resume: bool = False, force: bool = False, overwrite: bool = False,
    ) -> None:
        path = Path(path)
        self._exit = ExitStack()
        self._exit.enter_context(held(lock_path(path), f"{path} is being written by another "
                                      "evaluation: wait for it to finish or stop it"))
        try:
            env = config.stack()  # for its prompt template
            try:
                self.settings = settings_record(run_settings(config, agent, env))
            finally:
                env.close()
            if overwrite:
                path.unlink(missing_ok=True)
            self.done = open_results(path, self.settings, resume=resume, force=force)
        except BaseException:
            self._exit.close()
            raise
        self.name, self.env = name, arlarena_envs.resolve_env_id(config.env)
        self.extra = {**config.record, "settings": self.settings["digest"]}
        self.records: list[dict[str, Any]] = []
        self.run = uuid.uuid4().hex[:12]
        self._numbers = count()
        self._finish_reasons: dict[str, Counter[str]] = defaultdict(Counter)
        super().__init__(path)

    def spend(self, spent: dict[str, Any]) -> None:
        """Write one change of what the agent spent (:meth:`~wrappers.agents.base.Agent.
        record_spending`) as a ``spend`` record, numbered within this run (``run``, ``seq``),
        so that a copy of the file adds nothing to a report."""
        self.write({"type": "spend", "agent": self.name, "settings": self.settings["digest"],
                    "run": self.run, "seq": next(self._numbers), **spent})

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._exit.close()

    def _ids(self, episode: Episode) -> dict[str, Any]:
        return {"episode_id": episode.traj_id, "agent": self.name, "env": self.env,
                "seed": episode.seed, "sample": episode.start.sample}

    def turn(self, episode: Episode, turn: Turn) -> None:
        reply, info = turn.reply, turn.info
        record = {"type": "turn", **self._ids(episode), "step": turn.step, "prompt": turn.prompt,
                  "response": reply.text, **{key: info.get(key) for key in _CHECKED},
                  "reward": turn.reward, "env_reward": info.get("env_reward", turn.reward),
                  "anchor": turn.anchor, "won": info.get("won", False),
                  "terminated": turn.terminated, "truncated": turn.truncated}
        if reply.usage:
            record["usage"] = reply.usage
        record.update(reply.facts)
        if reply.facts.get("finish_reason"):
            self._finish_reasons[episode.traj_id][str(reply.facts["finish_reason"])] += 1
        if reply.transcript is not None:
            record["transcript"] = reply.transcript
        self.write(record)

    def finish(self, episode: Episode) -> None:
        info = episode.info
        record = {"type": "episode", **self._ids(episode), "task": episode.task,
                  "task_type": info.get("task_type"), "dataset": info.get("dataset"),
                  "won": episode.won, "score": episode.score, "return": episode.episode_return,
                  "turns": episode.turns, "valid_turns": episode.valid_turns,
                  "error": episode.error}
        if episode.usage:
            record["usage"] = episode.usage
        reasons = self._finish_reasons.pop(episode.traj_id, None)
        if reasons:
            record["finish_reasons"] = dict(reasons)
        record.update(self.extra)
        self.write(record)
        self.records.append(record)


def evaluate(
    config: EvalConfig,
    agent: Agent,
    results_path: str | Path,
    *,
    resume: bool = False,
    force: bool = False,
    overwrite: bool = False,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Run the evaluation; return the episode records written by this call.

    With ``resume``, episodes already finished in ``results_path`` are skipped and the turns of
    an interrupted episode are discarded first (episodes that ended with an error are run
    again); a file written under other settings is refused
    (:class:`~.settings.SettingsMismatch`) unless ``force``. Without ``resume``, an existing
    file is an error (so a run never silently mixes with an old one), unless ``overwrite``. An
    error in one reply ends that episode with an ``error`` record; an
    :class:`~wrappers.agents.base.AgentError` raised by the agent (endpoint down, request
    budget spent) propagates after everything finished so far, and what the agent spent, has
    been written. An interrupt stops the agent (:meth:`~wrappers.agents.base.Agent.stop`: the
    replies in flight arrive and are kept) before it propagates.
    """
    starts = config.starts()
    width = max(1, min(config.batch_size, len(starts)))
    with ResultsLog(results_path, config, agent.name, agent.settings(), resume=resume,
                    force=force, overwrite=overwrite) as log, make_env_pool(
                        config.stack, width, config.env_workers) as pool:
        todo = still_to_play(starts, log.done)
        agent.record_spending(log.spend)
        try:
            with tqdm(total=len(starts), initial=len(starts) - len(todo), unit="ep",
                      desc=f"{agent.name} on {log.env}", disable=not progress) as bar:
                play(pool, AgentResponder(agent), todo, [log], max_turns=config.max_turns,
                     reset_options=config.reset_options or None, bar=bar)
        except KeyboardInterrupt:
            agent.stop()
            raise
        finally:
            agent.record_spending(None)
            log.write_all(spend_records(agent, log.settings["digest"]))
    return log.records
