"""What produced a results file: its settings record, and the check a resume makes against it.

Holds :func:`run_settings` (the agent's settings: model and the content hash of its weights,
endpoint, sampling, seed; the prompt template and its version, history length and format check;
the env and task panel; the env's scorer, :meth:`~arlarena_envs.base.TextEnv.scorer`;
ARLArena's version), :func:`settings_record`, :func:`changed_settings`, :func:`open_results`
(the check and the clean-up a run starts with) and :class:`SettingsMismatch`.

A results file opens with one ``{"type": "settings", "digest": ..., ...}`` record, and every
episode record carries that digest as ``settings``. How many tasks and samples run is not a
setting (a resume may add tasks), nor is anything that cannot change a reply (batch size,
concurrency, timeouts, the cache, the request budget). A resume under other settings is refused
before anything runs, naming each difference; ``force`` continues anyway and appends the new
settings record, so the file still says which episodes ran under which settings.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import arlarena_envs
from arlarena_baselines.evaluation.results import append_records, prepare_resume, read_records
from wrappers.templates import TEMPLATES

if TYPE_CHECKING:
    from arlarena_baselines.evaluation.config import EvalConfig
    from wrappers.prompt import PromptWrapper

__all__ = [
    "SettingsMismatch",
    "changed_settings",
    "flat_settings",
    "latest_settings",
    "open_results",
    "run_settings",
    "settings_record",
    "template_version",
]


class SettingsMismatch(ValueError):
    """A resume whose settings differ from those the results were written with."""


def _digest(value: Any) -> str:
    blob = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def template_version(name: str) -> str:
    """A digest of the texts of prompt template ``name``: it changes whenever they do.

    >>> template_version("sokoban") == template_version("sokoban")
    True
    >>> template_version("sokoban") != template_version("alfworld")
    True
    """
    t = TEMPLATES[name]
    return _digest([t.text, t.later, t.max_chars, t.check])


def _version() -> str:
    try:
        return metadata.version("arlarena")
    except metadata.PackageNotFoundError:
        return "unknown"


def run_settings(config: EvalConfig, agent: dict, env: PromptWrapper) -> dict[str, Any]:
    """Everything that changes the replies to ``config``'s tasks (``agent``: what answers, as
    :meth:`~wrappers.agents.base.Agent.settings` says; ``env``: one of the run's wrapped envs,
    for its prompt template; a turn limit when set), as plain JSON."""
    panel = config.record.get("panel") or {}
    cut = {} if config.max_turns is None else {"max_turns": config.max_turns}
    s = config.stack
    settings = {
        "arlarena": _version(),
        "agent": agent,
        "env": {"id": arlarena_envs.resolve_env_id(s.env), "kwargs": s.env_kwargs,
                "reset_options": config.reset_options, "panel": panel.get("name"), **cut},
        "scorer": env.unwrapped.scorer(),
        "prompt": {"template": env.template, "template_version": template_version(env.template),
                   "history_length": s.history_length, "format_check": s.format_check,
                   "checked_by": env.active_check, "format_penalty": s.format_penalty,
                   "notice": s.notice},
    }
    return json.loads(json.dumps(settings, ensure_ascii=False, default=str))


def settings_record(settings: dict[str, Any]) -> dict[str, Any]:
    """The record a results file keeps of ``settings``, with their ``digest``."""
    return {"type": "settings", "digest": _digest(settings), **settings}


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(value, (dict, list)) or not value:
        return {prefix: value}
    flat: dict[str, Any] = {}
    for key, item in value.items() if isinstance(value, dict) else enumerate(value):
        flat.update(_flat(item, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def flat_settings(record: dict[str, Any]) -> dict[str, Any]:
    """A settings record as ``{dotted.name: value}`` (its type and digest left out).

    >>> flat_settings({"type": "settings", "digest": "a", "agent": {"seed": 1}})
    {'agent.seed': 1}
    """
    return _flat({k: v for k, v in record.items() if k not in ("type", "digest")})


def changed_settings(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per setting that differs between two settings records.

    >>> changed_settings({"type": "settings", "digest": "a", "prompt": {"history_length": 2}},
    ...                  {"type": "settings", "digest": "b", "prompt": {"history_length": 0}})
    ['prompt.history_length: 2 -> 0']
    """
    before, after = flat_settings(old), flat_settings(new)
    return [f"{key}: {json.dumps(before.get(key, '(unset)'))} -> "
            f"{json.dumps(after.get(key, '(unset)'))}"
            for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]


def latest_settings(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last settings record of a results file's ``records`` (the run it goes on with), or
    ``None`` when it has none."""
    return next((r for r in reversed(records) if r.get("type") == "settings"), None)


def open_results(
    path: str | Path, settings: dict[str, Any], *, resume: bool, force: bool = False
) -> set[str]:
    """Make ``path`` ready for a run under the settings record ``settings``; return the ids of
    the episodes it has finished.

    Without ``resume`` the file must not exist. With it, the file's latest settings record must
    equal ``settings`` (else :class:`SettingsMismatch` names the differences, and the file is
    left as it was), unless ``force``; then the unfinished episodes are dropped
    (:func:`~.results.prepare_resume`). The settings record is written when the file lacks it.
    """
    path = Path(path)
    if path.exists() and not resume:
        raise FileExistsError(f"{path} exists: pass resume=True (--resume) to continue it")
    records = list(read_records(path)) if path.exists() else []
    previous = latest_settings(records)
    if previous is None and any(r.get("type") == "episode" for r in records) and not force:
        raise SettingsMismatch(f"{path} has no settings record (it was written before results "
                               "kept their settings), so a resume could mix settings; pass "
                               "--force to continue it anyway")
    same = previous is not None and previous.get("digest") == settings["digest"]
    if previous is not None and not same and not force:
        changes = "\n".join(f"  {line}" for line in changed_settings(previous, settings))
        raise SettingsMismatch(f"{path} was written with other settings, so a resume would mix "
                               f"them in one table:\n{changes}\nwrite to another --out, or pass "
                               "--force to continue anyway (a new settings record marks where)")
    done = prepare_resume(path)
    if not same:
        append_records(path, [settings])
    return done
