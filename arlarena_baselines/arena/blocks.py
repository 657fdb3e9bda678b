"""The arena report's section across the two blocks of a grid made from two starts.

A grid whose runs cannot all share one start (the off-policy arena, whose BC start comes out
otherwise on other CPU kernels: docs/arena.md, "The grid's two starts") is made in blocks, each
pairing its methods with its own start and its own GRPO, and each judging the findings whose
methods it holds. The report of one block, given the other's report folder (``--beside``), puts
the two side by side (:func:`beside_section`), per final temperature:

- each method's gain over its own block's start: held-out success paired on the same (seed,
  level) episodes, its standard error carrying the seeds' spread (:mod:`.stats`);
- GRPO's gain on either start and their difference: how far a result carries from one start to
  the other;
- the study's finding 5 (SAMPO is best overall) over the methods of both blocks, judged on the
  gains by :func:`.findings.judge`.

Both blocks play the same levels from the same seeds, so a difference of two gains pairs level by
level too: within a block it is the plain paired difference (the start cancels), across blocks
it carries both starts' evaluation noise.

The report folder keeps the other block's path (:data:`BESIDE_FILE`, relative to itself), so
that ``arlarena arena --report`` rebuilds the section from the folder alone
(:func:`beside_folder`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from arlarena_baselines.arena.findings import judge
from arlarena_baselines.arena.plan import START
from arlarena_baselines.arena.results import (
    ConfigResult,
    final_temperatures,
    load_runs,
    select_configs,
    summarize,
    viewed_at,
)
from arlarena_baselines.arena.stats import Z, mean_se, paired_difference
from arlarena_baselines.arena.tables import pm, signed, table

__all__ = ["BESIDE_FILE", "Block", "Gains", "beside_folder", "beside_section", "keep_beside",
           "read_block"]

BESIDE_FILE = "beside.json"
"""Where a report folder keeps the other block's folder (``{"beside": path}``, relative to the
report folder)."""
REFERENCE = "GRPO"
BEST = 5
"""The finding judged across the blocks (numbered as :func:`.findings.judge` orders them)."""


@dataclass(frozen=True)
class Block:
    """One block of a grid: its folder's name, the start its runs record (weights hash
    and CPU kernels, ``unrecorded`` where no run keeps them) and its configurations."""

    name: str
    start_weights: str
    kernels: str
    configs: list[ConfigResult]

    @property
    def temperatures(self) -> list[float]:
        return final_temperatures(run for c in self.configs for run in c.runs)


@dataclass(frozen=True)
class Gains:
    """One method's held-out success and its gain over its own block's start at one
    temperature, per (seed, level) episode; :func:`.findings.judge` reads it as a configuration
    whose ``success`` is the mean gain. ``method`` is the method's name, with its block's after
    it where both blocks have the method."""

    method: str
    held_out: tuple[float, float]
    by_episode: dict[tuple[int, int], float]

    def _by_seed(self) -> dict[int, list[float]]:
        by_seed: dict[int, list[float]] = {}
        for (seed, _), gain in sorted(self.by_episode.items()):
            by_seed.setdefault(seed, []).append(gain)
        return by_seed

    @property
    def success(self) -> tuple[float, float]:
        """The mean gain and its standard error (across seeds when larger)."""
        return mean_se(list(self._by_seed().values()))

    def per_seed(self) -> dict[int, float]:
        """Each seed's mean gain."""
        return {seed: sum(g) / len(g) for seed, g in self._by_seed().items()}

    def outcomes(self, key: str = "won") -> dict[tuple[int, int], float]:
        return dict(self.by_episode)


def _recorded(configs: list[ConfigResult], key: str) -> str:
    """The values the runs' records keep under ``key``, or ``unrecorded``."""
    values = {str(run.record[key]) for c in configs for run in c.runs
              if run.record.get(key) is not None}
    return ", ".join(sorted(values)) or "unrecorded"


def read_block(folder: str | Path, configs: list[ConfigResult] | None = None) -> Block:
    """The block whose finished runs (or report) ``folder`` holds (``configs``: its runs,
    where the caller has them loaded); a :class:`ValueError` of one line when it holds no start
    evaluation."""
    folder = Path(folder)
    configs = summarize(load_runs(folder)) if configs is None else configs
    if not any(c.role == "start" for c in configs):
        raise ValueError(f"{folder} holds no start evaluation ({START}) of an arena: a block "
                         "beside another needs its own start to take gains from")
    return Block(folder.resolve().name, _recorded(configs, "start_weights"),
                 _recorded(configs, "cpu_kernels"), configs)


def _start(block: Block, temperature: float | None) -> ConfigResult:
    return next(c for c in viewed_at(block.configs, temperature) if c.role == "start")


def _gains(block: Block, temperature: float | None,
           shared: Collection[str] = ()) -> dict[str, Gains]:
    """Per method of ``block`` (its selected configuration), its gains over the block's start at
    ``temperature``; the methods in ``shared`` are named with the block after them."""
    view = viewed_at(block.configs, temperature)
    start = next(c for c in view if c.role == "start").outcomes()
    gains = {}
    for method, config in select_configs(view).items():
        outcomes = config.outcomes()
        gains[method] = Gains(f"{method} ({block.name})" if method in shared else method,
                              config.success,
                              {k: outcomes[k] - start[k] for k in outcomes.keys() & start.keys()})
    return gains


def _methods(block: Block) -> set[str]:
    return {c.method for c in block.configs if c.role not in ("start", "stress")}


def _name(temperature: float | None) -> str:
    return "the last held-out evaluation" if temperature is None else f"T = {temperature:g}"


def beside_section(here: Block, there: Block) -> list[str]:
    """The report's section across the blocks ``here`` (this report's) and ``there`` (markdown
    lines), at every final temperature both blocks have (at their last held-out evaluation
    when neither has any)."""
    lines = [
        "", f"## Beside the other block: {there.name}", "",
        f"This block, `{here.name}`, starts from weights {here.start_weights} (CPU kernels: "
        f"{here.kernels}); the block beside it, `{there.name}`, from {there.start_weights} "
        f"(CPU kernels: {there.kernels}). Each block pairs its methods with its own start. "
        "Per method: its held-out success and its gain over its own block's start, the mean "
        "paired difference on the same (seed, level) episodes ± its standard error (across "
        "seeds when larger), and each seed's. Both blocks played the same levels from the same "
        "seeds, so two gains also differ level by level: within a block that is the plain "
        "paired difference, across the blocks it carries both starts' evaluation noise. A "
        f"difference counts beyond {Z:g} standard errors. In the finding's evidence, a method "
        "of the other block that this block also has carries that block's name in brackets.",
    ]
    views: list[float | None] = [t for t in here.temperatures if t in there.temperatures]
    if not views and (here.temperatures or there.temperatures):
        return [*lines, "", "The two blocks share no final temperature: nothing to compare."]
    shared = _methods(here) & _methods(there)
    rows, notes, found = [], [], []
    for t in views or [None]:
        held_out = "last" if t is None else f"{t:g}"
        ours, theirs = _gains(here, t), _gains(there, t, shared)
        for block, gains in ((here, ours), (there, theirs)):
            start = _start(block, t)
            rows.append([held_out, START, block.name, str(len(start.runs)), pm(start.success),
                         "–", "–"])
            rows += [[held_out, method, block.name, str(len(g.per_seed())), pm(g.held_out),
                      signed(g.success),
                      ", ".join(f"{s}: {v:+.3f}" for s, v in g.per_seed().items())]
                     for method, g in gains.items()]
        if REFERENCE in ours and REFERENCE in theirs:
            mean, se, n = paired_difference(ours[REFERENCE].outcomes(),
                                            theirs[REFERENCE].outcomes())
            notes.append(f"At {_name(t)}, {REFERENCE}'s gain over this block's start − its gain "
                         f"over `{there.name}`'s: {mean:+.3f} ± {se:.3f} (n = {n}).")
        finding = judge([], {g.method: g for g in (*ours.values(), *theirs.values())})[BEST - 1]
        found.append([str(BEST), finding.claim, f"{_name(t)}, both blocks",
                      f"**{finding.verdict}**",
                      f"gains over each block's start: {finding.evidence}"])
    return [*lines, "",
            *table(["T (held-out)", "method", "block", "seeds", "held-out success",
                    "gain over its start", "gain per seed"], rows),
            *(["", " ".join(notes)] if notes else []), "",
            *table(["", "claim", "held-out", "verdict", "evidence"], found)]


def beside_folder(root: Path, out: Path, given: str | Path | None) -> Path | None:
    """The other block's folder a report reads: ``given``, else the one ``root`` keeps, else the
    one ``out`` keeps (each :data:`BESIDE_FILE`'s path is relative to its folder), else
    ``None`` (no section). A folder beside itself is refused."""
    folder = Path(given) if given is not None else None
    if folder is None:
        kept = next((p for p in (root / BESIDE_FILE, out / BESIDE_FILE) if p.is_file()), None)
        if kept is None:
            return None
        folder = kept.parent / json.loads(kept.read_text())["beside"]
    if folder.resolve() in (root.resolve(), out.resolve()):
        raise ValueError(f"{folder} is this report's own block: --beside takes the other "
                         "block's report folder")
    return folder


def keep_beside(folder: Path, out: Path) -> Path:
    """Keep ``folder`` (the other block's) in ``out``'s :data:`BESIDE_FILE`, relative to
    ``out``; return that file."""
    path = out / BESIDE_FILE
    path.write_text(json.dumps({"beside": os.path.relpath(folder.resolve(), out.resolve())})
                    + "\n")
    return path
