"""The options of the command line that take one of a fixed set of values.

Holds :class:`Choices` (a name → one-line description table, loaded from its registry on first
use, that checks a value and suggests the nearest name), the tables of the CLI
(:data:`ENVS`, :data:`AGENTS`, :data:`METHODS`, :data:`BACKENDS`, :data:`TEMPLATES`,
:data:`DTYPES`, :data:`DEVICES`, :data:`PANELS`, :data:`SPLITS`, :data:`FIELD_CHOICES` for the
trainer's config keys), :func:`check_split` (splits depend on the env), :func:`suggest`,
:func:`unknown` and
:class:`ArenaParser` / :class:`ChoicesHelpFormatter`, which list an option's choices under its
help line.

Registries are read only when a value is checked or ``--help`` is printed, so building the
parser imports no registry (``METHODS`` and the backends import torch).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

__all__ = [
    "AGENTS",
    "BACKENDS",
    "DEVICES",
    "DTYPES",
    "ENVS",
    "FIELD_CHOICES",
    "METHODS",
    "PANELS",
    "SPLITS",
    "TEMPLATES",
    "ArenaParser",
    "Choices",
    "ChoicesHelpFormatter",
    "check_split",
    "env_family",
    "split_names",
    "suggest",
    "unknown",
]

_LISTING = "\x00"  # marks the lines of a choices listing (kept one per line, never re-wrapped)


def suggest(value: str, names: Iterable[str]) -> str | None:
    """The name nearest to ``value`` (compared case-insensitively), or ``None``."""
    lowered = {n.lower(): n for n in names}
    close = difflib.get_close_matches(value.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[close[0]] if close else None


def unknown(kind: str, value: str, names: Iterable[str], tail: str = "", where: str = "") -> str:
    """The message for a value that is not one of ``names``: the nearest name, then all.

    >>> unknown("method", "SAMP", ["GRPO", "SAMPO"])
    "unknown method 'SAMP'; did you mean 'SAMPO'? known: GRPO, SAMPO"
    """
    names = list(names)
    near = suggest(value, names)
    hint = f"did you mean {near!r}? " if near else ""
    return f"unknown {kind} {value!r}{where}; {hint}known: {', '.join(names)}{tail}"


def _summary(obj: object) -> str:
    """The first sentence of ``obj``'s docstring, without reST markup."""
    doc = (getattr(obj, "__doc__", None) or "").strip().split("\n\n")[0]
    text = " ".join(doc.split())
    text = re.sub(r":\w+:`~?([^`]+)`", lambda m: m.group(1).split(".")[-1], text)
    text = text.replace("``", "")
    first = re.split(r"(?<=[.;:])\s", text, maxsplit=1)[0]
    return first.rstrip(".;:")


@dataclass(eq=False)  # hashable by identity: argparse looks types up in a registry
class Choices:
    """The values one option takes: names with one-line descriptions, loaded on first use.

    Used as an argparse ``type``, it returns the canonical name of a known value (matched
    case-insensitively when ``ignore_case``) and rejects any other with the known names and
    the nearest one; :class:`ChoicesHelpFormatter` lists the names under the option's help.
    ``many`` takes comma-separated names; ``strict=False`` only lists (the value is checked
    later, e.g. against the env it belongs to); ``cached=False`` loads the table at every use
    (the task panels: ``$ARLARENA_DATA`` may point elsewhere).

    >>> colours = Choices("colour", lambda: {"red": "warm", "blue": "cold"})
    >>> colours("blue")
    'blue'
    >>> colours("bleu")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: unknown colour 'bleu'; did you mean 'blue'? known: red, blue
    """

    kind: str
    load: Callable[[], Mapping[str, str]]
    ignore_case: bool = False
    many: bool = False
    strict: bool = True
    cached: bool = True
    listed: bool = True
    _table: dict[str, str] | None = field(default=None, repr=False)

    @property
    def __name__(self) -> str:  # argparse names the type in some messages
        return self.kind

    @property
    def table(self) -> dict[str, str]:
        """name → description, loaded once (each time if not ``cached``)."""
        if self._table is None or not self.cached:
            self._table = dict(self.load())
        return self._table

    def check(self, value: str) -> str:
        """The canonical name of ``value``, or an ``ArgumentTypeError`` naming the choices."""
        names = list(self.table)
        if value in self.table:
            return value
        if self.ignore_case:
            for name in names:
                if name.lower() == value.lower():
                    return name
        raise argparse.ArgumentTypeError(unknown(self.kind, value, names))

    def __call__(self, value: str) -> str:
        if not self.strict:  # listed in the help, checked later (e.g. against the env)
            return value
        if not self.many:
            return self.check(value)
        return ",".join(self.check(v.strip()) for v in value.split(",") if v.strip())

    def unlisted(self) -> Choices:
        """The same check without the listing in the help (for a second option taking the
        same values)."""
        return replace(self, listed=False)

    def listing(self) -> str:
        """One line per name: the name, then its description."""
        width = max(map(len, self.table), default=0)
        return "\n".join(f"{_LISTING}{name:<{width}}  {text}".rstrip()
                         for name, text in self.table.items())


class ChoicesHelpFormatter(argparse.HelpFormatter):
    """Help that lists, under an option whose type is a :class:`Choices`, every choice on a
    line of its own (descriptions are not re-wrapped)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if isinstance(action.type, Choices) and action.type.listed:
            text += "; one of:\n" + action.type.listing().replace("%", "%%")
        return text

    def _split_lines(self, text: str, width: int) -> list[str]:
        lines: list[str] = []
        for part in text.split("\n"):
            if part.startswith(_LISTING):
                lines.append("  " + part[len(_LISTING):])
            else:
                lines += textwrap.wrap(part, width) or [""]
        return lines


class ArenaParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose help lists the choices of its options (sub-command parsers
    made from it are ones too)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", ChoicesHelpFormatter)
        super().__init__(*args, **kwargs)


def _envs() -> dict[str, str]:
    from arlarena_envs.registration import ENV_ALIASES, ENV_SPECS

    table = {alias: f"= {env_id}" for alias, env_id in ENV_ALIASES.items()}
    for env_id, spec in ENV_SPECS.items():
        kwargs = ", ".join(f"{k}={v}" for k, v in spec.kwargs.items())
        table[env_id] = f"{spec.max_episode_steps} turns" + (f"; {kwargs}" if kwargs else "")
    return table


def _agents() -> dict[str, str]:
    from wrappers.agents import AGENTS as registry

    return {name: _summary(factory) for name, factory in registry.items()}


def _methods() -> dict[str, str]:
    from arlarena_baselines.algos import METHODS as registry

    return {name: method.summary for name, method in registry.items()}


def _backends() -> dict[str, str]:
    from arlarena_baselines.rollout import BACKENDS as registry

    return {name: _summary(factory) for name, factory in registry.items()}


def _templates() -> dict[str, str]:
    import arlarena_baselines.rollout.templates  # noqa: F401  (adds the compact variants)
    from wrappers.templates import TEMPLATES as registry

    return {name: "" for name in registry}


def _panels() -> dict[str, str]:
    from arlarena_envs.panels import panel_specs

    return {name: spec.summary for name, spec in panel_specs().items()}


ENVS = Choices("environment", _envs, ignore_case=True)
AGENTS = Choices("agent", _agents, many=True)
METHODS = Choices("method", _methods, ignore_case=True)
BACKENDS = Choices("generation backend", _backends)
TEMPLATES = Choices("prompt template", _templates)
DTYPES = Choices("dtype", lambda: {"auto": "bf16 autocast on a bf16 GPU, else float32",
                                   "float32": "", "bfloat16": ""})
DEVICES = Choices("device", lambda: {"auto": "CUDA if available", "cpu": "", "cuda": ""})
PANELS = Choices("task panel", _panels, cached=False)

FIELD_CHOICES: dict[str, Choices] = {
    "rollout.env": ENVS,
    "rollout.backend": BACKENDS,
    "rollout.template": TEMPLATES,
    "rl.method": METHODS,
    "sft.agent": Choices("agent", _agents),
    "model.dtype": DTYPES,
    "model.device": DEVICES,
}
"""The trainer's config keys that take one of a fixed set of values."""

# env family (the package of its entry point) -> (module, attributes listing its splits)
_SPLITS: dict[str, tuple[str, tuple[str, ...]]] = {
    "sokoban": ("arlarena_envs.sokoban.split", ("SPLITS",)),
    "webshop": ("arlarena_envs.webshop.goals", ("SPLITS",)),
    "alfworld": ("arlarena_envs.alfworld.scenes", ("SPLITS", "SPLIT_ALIASES")),
    "tir_math": ("arlarena_envs.tir_math.data", ("BUILTIN_SETS",)),
}
_FILE_SPLITS = ("tir_math",)  # families whose split may also be a task file


def env_family(env_id: str) -> str:
    """The env package of a registered id (``ARLArena/WebShop-Small-v0`` → ``webshop``)."""
    from arlarena_envs.registration import env_family as family

    return family(env_id)


def split_names(env_id: str) -> tuple[str, ...]:
    """The named splits of an env (empty when it has none)."""
    family = env_family(env_id)
    if family not in _SPLITS:
        return ()
    module, attributes = _SPLITS[family]
    loaded = importlib.import_module(module)
    return tuple(name for attribute in attributes for name in getattr(loaded, attribute))


def _splits() -> dict[str, str]:
    from arlarena_envs.registration import ENV_SPECS

    table: dict[str, list[str]] = {}
    for env_id in ENV_SPECS:
        names = ", ".join(split_names(env_id)) or "no splits"
        if env_family(env_id) in _FILE_SPLITS:
            names += ", or a .jsonl/.json/.parquet task file"
        table.setdefault(names, []).append(env_id)
    return {", ".join(ids): names for names, ids in table.items()}


SPLITS = Choices("split", _splits, strict=False)


def check_split(env_id: str, split: str) -> None:
    """Raise a ``ValueError`` naming the env's splits (and the nearest) if ``split`` is not one
    of them (TIR Math also takes a task file)."""
    names = split_names(env_id)
    if split in names or (env_family(env_id) in _FILE_SPLITS and Path(split).is_file()):
        return
    if not names:
        raise ValueError(f"{env_id} has no splits (got --split {split!r})")
    files = ", or a .jsonl/.json/.parquet task file" if env_family(env_id) in _FILE_SPLITS else ""
    raise ValueError(unknown("split", split, names, files, where=f" of {env_id}"))
