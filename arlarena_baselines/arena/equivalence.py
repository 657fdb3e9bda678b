"""Which methods are the same procedure in a regime, computed from their runs.

On-policy (one update a step) the ratio is 1 when the loss is taken, so methods that differ
only in how they treat a ratio away from 1 train alike. This module says so from the runs:
two runs of one seed and one setting are compared step by step (:func:`compare_runs`):

- *identical episodes*: every step drew the same rollouts, every gradient norm agreed to
  :data:`RTOL`, and every held-out episode (the curve and any final evaluation) is the same;
- *same gradients*: the gradient norms agreed to :data:`RTOL` at every one of at least
  :data:`MIN_STEPS` steps whose rollouts were the same, until the rollouts drifted apart (the
  same counts drawn, different samples: floating-point noise in the weights, no difference of
  procedure, changes one sampled token and from then on everything);
- *differ*: a gradient norm beyond :data:`RTOL` on the same rollouts, or rollouts drawn
  differently (groups filtered, rounds, groups kept);
- *undecided*: the rollouts drifted apart before :data:`MIN_STEPS` steps.

:func:`equivalences` joins the pairs that are the same on every seed both ran into classes, per
setting; :func:`equivalence_section` is the report's table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.arena.tables import table

__all__ = ["MIN_STEPS", "RTOL", "Equivalence", "Sameness", "compare_runs", "equivalence_section",
           "equivalences"]

# Gradient norms of the same procedure on the same rollouts agree to a few 1e-6 (the order of
# summation differs between clipping rules that give the same value); distinct procedures'
# differ by 1e-3 and more from the first step.
RTOL = 1e-4
# Steps of equal gradients on equal rollouts that make two runs the same procedure.
MIN_STEPS = 3
# How a step's rollouts were drawn: a difference here is a difference of procedure.
DRAW_KEYS = (mn.ROUNDS, mn.KEPT_GROUPS, mn.GROUPS_FILTERED, mn.GROUPS_TOPPED_UP)
# What the rollouts were: discrete outcomes and counts, equal only for the same samples.
SAMPLE_KEYS = (mn.SAMPLES, mn.EPISODES, mn.SUCCESS_RATE, mn.TURNS,
               mn.RESPONSE_LENGTH, mn.RETURN, mn.VALID_FORMAT_RATIO)
VERDICTS = ("identical episodes", "same gradients", "differ", "undecided")


@dataclass(frozen=True)
class Sameness:
    """Two runs compared: a verdict of :data:`VERDICTS`, the steps of equal gradients on
    equal rollouts, and a short reason."""

    verdict: str
    steps: int
    reason: str

    @property
    def same(self) -> bool:
        return self.verdict in VERDICTS[:2]


def _equal(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float)
                      and math.isnan(a) and math.isnan(b))


def _close(a: float | None, b: float | None, rtol: float) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=rtol, abs_tol=1e-12)


def _episodes(run: Any) -> tuple[Any, list[tuple[Any, ...]]]:
    final = [(e.get("temperature"), e.get("seed"), e.get("won"), e.get("score"),
              e.get("return"), e.get("turns")) for e in run.final]
    return run.curve, sorted(final, key=repr)


def compare_runs(a: Any, b: Any, rtol: float = RTOL, min_steps: int = MIN_STEPS) -> Sameness:
    """Whether runs ``a`` and ``b`` (:class:`~.results.RunResult`; one seed, one setting)
    are the same procedure, from their logged steps (see the module docs)."""
    a_steps = {r["step"]: r for r in a.steps}
    b_steps = {r["step"]: r for r in b.steps}
    steps = sorted(a_steps.keys() & b_steps.keys())
    if not steps or len(a_steps) != len(b_steps):
        return Sameness("undecided", 0, "not the same steps logged")
    shared = 0
    for step in steps:
        x, y = a_steps[step], b_steps[step]
        if not all(_equal(x.get(k), y.get(k)) for k in DRAW_KEYS):
            return Sameness("differ", shared, f"rollouts drawn differently at step {step}")
        if not all(_equal(x.get(k), y.get(k)) for k in SAMPLE_KEYS):
            if shared >= min_steps:
                return Sameness("same gradients", shared,
                                f"gradient norms equal to {rtol:g} on steps 1–{shared}; the "
                                f"rollouts drifted apart at step {step}")
            return Sameness("undecided", shared, f"the rollouts drifted apart at step {step}")
        gx, gy = x.get(mn.GRAD_NORM), y.get(mn.GRAD_NORM)
        if not _close(gx, gy, rtol):
            return Sameness("differ", shared,
                            f"gradient norm {gx:.6g} vs {gy:.6g} at step {step}")
        shared += 1
    if _episodes(a) == _episodes(b):
        return Sameness("identical episodes", shared,
                        f"the same rollouts and held-out episodes at all {shared} steps, "
                        f"gradient norms equal to {rtol:g}")
    return Sameness("same gradients", shared,
                    f"gradient norms equal to {rtol:g} on the same rollouts at all {shared} "
                    "steps; held-out episodes differ")


@dataclass(frozen=True)
class Equivalence:
    """Methods that are one procedure in ``setting`` on ``seeds``: the weakest ``verdict``
    among their pairs and the fewest steps it rests on."""

    setting: str
    methods: tuple[str, ...]
    seeds: tuple[int, ...]
    verdict: str
    steps: int


def _pair(x: Any, y: Any) -> tuple[list[int], list[Sameness]]:
    """Compare two configurations seed by seed, on the seeds both ran."""
    a, b = {r.seed: r for r in x.runs}, {r.seed: r for r in y.runs}
    seeds = sorted(a.keys() & b.keys())
    return seeds, [compare_runs(a[s], b[s]) for s in seeds]


def _root(parent: dict[str, str], method: str) -> str:
    """The representative of ``method``'s class (union-find without ranks: a dozen methods)."""
    while parent[method] != method:
        method = parent[method]
    return method


def equivalences(configs: Sequence[Any]) -> list[Equivalence]:
    """Per setting, the classes of methods (two or more) whose runs are the same procedure on
    every seed both ran (:func:`compare_runs`), joined through the pairs that are."""
    found: list[Equivalence] = []
    settings = dict.fromkeys(c.setting for c in configs if c.role != "start")
    for setting in settings:
        group = [c for c in configs if c.setting == setting and c.role != "start"]
        parent = {c.method: c.method for c in group}
        evidence: dict[tuple[str, str], tuple[list[int], list[Sameness]]] = {}
        for x, y in combinations(group, 2):
            seeds, results = _pair(x, y)
            if seeds and all(r.same for r in results):
                evidence[(x.method, y.method)] = (seeds, results)
                parent[_root(parent, y.method)] = _root(parent, x.method)
        classes: dict[str, list[str]] = {}
        for c in group:
            classes.setdefault(_root(parent, c.method), []).append(c.method)
        for members in classes.values():
            if len(members) < 2:
                continue
            pairs = [evidence[p] for p in combinations(members, 2) if p in evidence]
            results = [r for _, rs in pairs for r in rs]
            seeds = sorted({s for ss, _ in pairs for s in ss})
            verdict = ("identical episodes" if all(r.verdict == VERDICTS[0] for r in results)
                       else "same gradients")
            found.append(Equivalence(setting, tuple(members), tuple(seeds), verdict,
                                     min(r.steps for r in results)))
    return found


def equivalence_section(configs: Sequence[Any]) -> list[str]:
    """The report's table of the equivalences found (nothing when no two methods share a
    setting)."""
    if not any(len([c for c in configs if c.setting == s and c.role != "start"]) > 1
               for s in {c.setting for c in configs}):
        return []
    found = equivalences(configs)
    intro = (
        "Methods that are one procedure in a setting, computed from the runs: two runs of a "
        "seed are compared step by step; *identical episodes*: the same rollouts at every step, "
        f"gradient norms equal to a relative {RTOL:g}, and the same held-out episodes; *same "
        f"gradients*: gradient norms equal to {RTOL:g} at every step whose rollouts were the "
        f"same, at least {MIN_STEPS} of them, until the rollouts drifted apart with the same "
        "counts drawn (floating-point noise). Methods are joined when every seed both ran "
        "says so; steps: the fewest such steps among the class's pairs. Their differences "
        "in the tables are differences of noise, not of method.")
    rows = [[e.setting, ", ".join(e.methods), ", ".join(map(str, e.seeds)), e.verdict,
             str(e.steps)] for e in found]
    if not rows:
        return ["", "## Equivalences", "", intro, "", "None found: every pair of methods "
                "differs in every setting."]
    return ["", "## Equivalences", "", intro, "",
            *table(["setting", "methods", "seeds", "same as", "steps"], rows)]
