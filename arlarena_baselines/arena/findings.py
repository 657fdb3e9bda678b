"""The study's five findings, judged on an arena's results.

Holds :class:`Finding` (a claim, its verdict and the numbers behind it), :func:`judge` (all
five), :func:`find` (a method's configuration of a role) and :class:`Configuration` (what a
finding reads of one).

A verdict is one of :data:`VERDICTS`:

- ``holds`` / ``fails``: the arena shows the claim / its contrary;
- ``within noise``: the difference the claim is about is within :data:`Z` standard errors;
- ``mixed``: a claim about two methods holds for one and fails for the other;
- ``not run``: the arena lacks a method the claim needs.

Differences of held-out success are paired on the (seed, level) episodes both runs played;
their standard error carries the seeds' spread where there are several (see :mod:`.stats`).
A configuration *collapses* when one of its runs did (the collapse detector fired, or held-out
success dropped from its peak for good beyond :data:`~.stats.COLLAPSE_Z` paired standard errors).
The stability variance of the study is quoted, not judged on (see :mod:`.stats`).

Findings 1 and 2 are judged on the stress grid where the arena has one (:mod:`.stress`): over
the cells where GRPO or GSPO stays stable, finding 1 holds when CISPO or SAPO collapses in more
cells than GSPO (fails when in fewer), finding 2 when CISPO collapses in more cells than CISPO_SM
or SAPO than SAPO_SM. Without a stress grid they read the base and staleness rows: masking is
then judged on collapses where the unmasked method collapsed, else on held-out success (whether
the mask keeps more of what the unmasked method's updates lose).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from arlarena_baselines.arena.stats import Z, paired_difference
from arlarena_baselines.arena.stress import StressCell, collapse_counts

__all__ = ["VERDICTS", "Configuration", "Finding", "by_difference", "find", "judge"]

VERDICTS = ("holds", "fails", "within noise", "mixed", "not run")

Outcomes = Mapping[tuple[int, int], float]


class Configuration(Protocol):
    """What a finding reads of one method × setting over its seeds (a
    :class:`~arlarena_baselines.arena.results.ConfigResult`)."""

    method: str
    role: str
    setting: str
    success: tuple[float, float]
    collapses: list[tuple[int, int]]
    stable: bool
    variance: float
    seeds: list[int]

    def outcomes(self, key: str = "won") -> dict[tuple[int, int], float]: ...


@dataclass(frozen=True)
class Finding:
    """One of the study's claims as this arena judges it."""

    claim: str
    verdict: str
    evidence: str


def find(configs: Sequence[Configuration], method: str, role: str) -> Configuration | None:
    """The first configuration of ``method`` with ``role``, or ``None``."""
    return next((c for c in configs if c.method == method and c.role == role), None)


def by_difference(mean: float, se: float) -> str:
    """``holds`` / ``fails`` when ``mean`` is beyond ``Z`` standard errors above / below 0."""
    if mean - Z * se > 0:
        return "holds"
    if mean + Z * se < 0:
        return "fails"
    return "within noise"


def _delta(a: Outcomes, b: Outcomes, configs: int = 0) -> tuple[float, float, str]:
    """The paired difference ``a − b`` and its text; with ``configs`` (how many configurations
    it reads), the text names the seeds it is paired on and the runs behind it, which are the
    shared seeds' alone when one configuration has fewer seeds."""
    mean, se, n = paired_difference(a, b)
    text = f"{mean:+.3f} ± {se:.3f} (n = {n}"
    if configs:
        seeds = sorted({seed for seed, _ in a.keys() & b.keys()})
        text += (f"; seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}: "
                 f"{configs * len(seeds)} runs")
    return mean, se, text + ")"


def _combined(verdicts: Sequence[str]) -> str:
    distinct = set(verdicts)
    if len(distinct) == 1:
        return verdicts[0]
    return "mixed" if {"holds", "fails"} <= distinct else "within noise"


def _state(config: Configuration) -> str:
    """A configuration's collapses and stability, with the seeds they rest on (a grid made in
    sittings may hold fewer of one method's seeds than of another's)."""
    collapses = ", ".join(f"step {step} (seed {seed})" for seed, step in config.collapses)
    seeds = len(config.seeds)
    return (f"{config.method} {config.setting} ({seeds} seed{'s' if seeds != 1 else ''}): "
            f"{'collapsed at ' + collapses if collapses else 'no collapse'}, "
            f"{'stable' if config.stable else 'unstable'} (var {config.variance:.3g})")


def _clipping(configs: Sequence[Configuration]) -> Finding:
    claim = ("Tolerant clipping (CISPO, SAPO) collapses; sequence-level clipping (GSPO) stays "
             "stable.")
    rows = {m: [c for c in configs if c.method == m and c.role in ("base", "staleness")]
            for m in ("CISPO", "SAPO", "GSPO")}
    if not all(rows.values()):
        return Finding(claim, "not run", "needs CISPO, SAPO and GSPO")
    tolerant = any(c.collapses for m in ("CISPO", "SAPO") for c in rows[m])
    sequence = not any(c.collapses for c in rows["GSPO"])
    verdict = "holds" if tolerant and sequence else "fails"
    evidence = "; ".join(_state(c) for m in rows for c in rows[m])
    return Finding(claim, verdict, evidence)


def _masking(configs: Sequence[Configuration]) -> Finding:
    claim = "Sequence masking stabilises CISPO and SAPO."
    verdicts, evidence = [], []
    for method in ("CISPO", "SAPO"):
        plain, masked = find(configs, method, "base"), find(configs, f"{method}_SM", "base")
        if plain is None or masked is None:
            continue
        if plain.collapses:
            verdict = "fails" if masked.collapses else "holds"
            evidence.append(f"{_state(plain)}; {_state(masked)}")
        else:  # no collapse to prevent: does the mask keep more of the start's success?
            mean, se, text = _delta(masked.outcomes(), plain.outcomes(), 2)
            verdict = by_difference(mean, se)
            evidence.append(f"no collapse of {method} to prevent; held-out success "
                            f"{method}_SM − {method}: {text}")
        verdicts.append(verdict)
    if not verdicts:
        return Finding(claim, "not run", "needs CISPO and CISPO_SM, or SAPO and SAPO_SM")
    return Finding(claim, _combined(verdicts), "; ".join(evidence))


def _beats(configs: Mapping[str, Configuration], better: str, worse: str) -> Finding:
    claim = f"{better} beats {worse}."
    if better not in configs or worse not in configs:
        return Finding(claim, "not run", f"needs {better} and {worse}")
    mean, se, text = _delta(configs[better].outcomes(), configs[worse].outcomes(), 2)
    return Finding(claim, by_difference(mean, se), f"held-out success {better} − {worse}: {text}")


def _filtering(configs: Mapping[str, Configuration]) -> Finding:
    claim = "DAPO's filtering helps GiGPO more than GRPO."
    names = ("DAPO_GiGPO", "GiGPO", "DAPO_GRPO", "GRPO")
    if not all(n in configs for n in names):
        return Finding(claim, "not run", "needs " + ", ".join(names))
    o = {n: configs[n].outcomes() for n in names}

    def gain(a: Outcomes, b: Outcomes) -> dict[tuple[int, int], float]:
        return {k: a[k] - b[k] for k in a.keys() & b.keys()}

    mean, se, text = _delta(gain(o["DAPO_GiGPO"], o["GiGPO"]), gain(o["DAPO_GRPO"], o["GRPO"]),
                            len(names))
    evidence = (f"gain on GiGPO {_delta(o['DAPO_GiGPO'], o['GiGPO'])[2]}, on GRPO "
                f"{_delta(o['DAPO_GRPO'], o['GRPO'])[2]}; their difference {text}")
    return Finding(claim, by_difference(mean, se), evidence)


def _best(configs: Mapping[str, Configuration], best: str) -> Finding:
    claim = f"{best} is best overall."
    others = {m: c for m, c in configs.items() if m != best}
    if best not in configs or not others:
        return Finding(claim, "not run", f"needs {best} and another method")
    rival = max(others.values(), key=lambda c: c.success[0])
    mean, se, text = _delta(configs[best].outcomes(), rival.outcomes(), 2)
    verdict = by_difference(mean, se)
    if verdict == "holds" and configs[best].success[0] < rival.success[0]:
        verdict = "within noise"  # paired on fewer seeds than the means: no claim either way
    return Finding(claim, verdict,
                   f"the best other method is {rival.method} "
                   f"({rival.success[0]:.3f}); {best} − {rival.method}: {text}")


def _by_count(more: int, fewer: int) -> str:
    return "holds" if more > fewer else "fails" if more < fewer else "within noise"


def _stress_clipping(cells: Sequence[StressCell]) -> Finding:
    claim = ("Tolerant clipping (CISPO, SAPO) collapses; sequence-level clipping (GSPO) stays "
             "stable.")
    calm, n = collapse_counts(cells)
    if not all(m in n for m in ("CISPO", "SAPO", "GSPO")):
        return Finding(claim, "not run", "needs CISPO, SAPO and GSPO in the stress grid")
    verdict = _by_count(max(n["CISPO"], n["SAPO"]), n["GSPO"])
    runs = sum(len(c.runs) for cell in calm for c in cell.configs.values())
    # GSPO is compared and also picks the cells: its collapses over every cell, beside.
    every = {m: sum(1 for cell in cells if m in cell.configs and cell.configs[m].collapses)
             for m in ("CISPO", "SAPO", "GSPO")}
    return Finding(claim, verdict,
                   f"collapsed in CISPO {n['CISPO']}, SAPO {n['SAPO']}, GSPO {n['GSPO']} of the "
                   f"{len(calm)} cells (of {len(cells)}) where GRPO or GSPO stays stable, "
                   f"{runs} runs in those cells; over all {len(cells)} cells: CISPO "
                   f"{every['CISPO']}, SAPO {every['SAPO']}, GSPO {every['GSPO']}")


def _stress_masking(cells: Sequence[StressCell]) -> Finding:
    claim = "Sequence masking stabilises CISPO and SAPO."
    calm, n = collapse_counts(cells)
    pairs = [m for m in ("CISPO", "SAPO") if m in n and f"{m}_SM" in n]
    if not pairs:
        return Finding(claim, "not run", "needs CISPO and CISPO_SM, or SAPO and SAPO_SM in the "
                       "stress grid")
    verdicts = {_by_count(n[m], n[f"{m}_SM"]) for m in pairs}
    # One method is enough for the claim (the rule); one against it and none for it
    # fails it.
    verdict = ("mixed" if {"holds", "fails"} <= verdicts else "holds" if "holds" in verdicts
               else "fails" if "fails" in verdicts else "within noise")
    evidence = "; ".join(f"{m} {n[m]} vs {m}_SM {n[f'{m}_SM']}" for m in pairs)
    return Finding(claim, verdict, f"collapsed cells of the {len(calm)} where GRPO or GSPO stays "
                   f"stable: {evidence}")


def judge(configs: Sequence[Configuration], chosen: Mapping[str, Configuration],
          cells: Sequence[StressCell] = ()) -> list[Finding]:
    """The five findings, in the issue's order, on ``configs`` (every configuration),
    ``chosen`` (per method, the selected one) and the stress grid's ``cells`` (findings 1
    and 2 are judged on them when there are any)."""
    return [
        _stress_clipping(cells) if cells else _clipping(configs),
        _stress_masking(cells) if cells else _masking(configs),
        _beats(chosen, "GiGPO", "GRPO"),
        _filtering(chosen),
        _best(chosen, "SAMPO"),
    ]
