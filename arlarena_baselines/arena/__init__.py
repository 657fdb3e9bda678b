"""The micro-arena: the study's comparison of the methods of ``METHODS``, at CPU scale.

Every method trains from the same checkpoint with the same config (rollout budget, update
mini-batches, held-out levels, sampling) and seeds, through the local trainer; a report then
gives the study's tables (held-out success against GRPO, stability, collapses; the stabiliser
rows of CISPO and SAPO; high staleness; the per-method grid search) and figures.

- :mod:`.plan`: :class:`ArenaPlan`, :class:`Setting`, :class:`RunSpec`, :func:`plan_runs`,
  :func:`parse_grid`: which runs an arena makes;
- :mod:`.runner`: :class:`ArenaTrainer`, :func:`run_one`, :func:`run_arena`: running them,
  resumably, under one progress bar;
- :mod:`.stats`: means ± standard errors, paired differences, the stability criterion, the
  grid's selection rule;
- :mod:`.report`: loading finished runs, the tables (markdown, CSV), :func:`write_report`;
- :mod:`.figures`: success curves, the diagnostics panel, the 8-group KL shares.

``arlarena arena`` (:mod:`arlarena_baselines.cli.arena`) is the command line.
"""

from arlarena_baselines.arena.plan import (
    IS_CLIPPING_METHODS,
    STABILISED_METHODS,
    ArenaPlan,
    RunSpec,
    Setting,
    parse_grid,
    plan_runs,
)

__all__ = [
    "IS_CLIPPING_METHODS",
    "STABILISED_METHODS",
    "ArenaPlan",
    "RunSpec",
    "Setting",
    "parse_grid",
    "plan_runs",
]
