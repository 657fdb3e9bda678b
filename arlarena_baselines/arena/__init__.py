"""The arena: the study's comparison of the methods of ``METHODS``, at CPU scale.

Every method trains from the same checkpoint with the same config (rollout budget, update
mini-batches, held-out levels, sampling) and seeds, through the local trainer, and may end with
a final evaluation at several temperatures; a stress grid of learning rate × staleness provokes
collapse on purpose; a report then gives the study's tables (held-out success against GRPO and
the start, stability, collapses; the stabiliser rows of CISPO and SAPO; high staleness; the
per-method grid search; the stress grid) and figures.

- :mod:`.plan`: :class:`ArenaPlan`, :class:`StressGrid`, :class:`Setting`, :class:`RunSpec`,
  :func:`plan_runs`, :func:`parse_grid`: which runs an arena makes;
- :mod:`.runner`: :class:`ArenaTrainer`, :func:`run_one`, :func:`run_arena`,
  :func:`final_evaluation`: running them, resumably, under one progress bar;
- :mod:`.stats`: means ± standard errors, paired differences, the study's stability variance,
  the drop from the peak that marks a collapse, per-seed effects, the grid's selection rule;
- :mod:`.results`: finished runs loaded and grouped by configuration, the selection;
- :mod:`.stress`: the stress grid's cells, their collapse counts and table;
- :mod:`.findings`: the study's five findings judged;
- :mod:`.equivalence`: which methods are the same procedure in a setting, from their runs;
- :mod:`.stability`: the drop from peak held-out success per run, against GRPO's per method;
- :mod:`.figure3`: the study's Figure 3 quantities (each method's own band, the KL shares);
- :mod:`.tables`: number and markdown-table formatting;
- :mod:`.report`: the tables (markdown, CSV), :func:`write_report`;
- :mod:`.alfworld`: the report's ALFWorld section, from ``make arena-alfworld``'s comparison;
- :mod:`.blocks`: the report's section across the two blocks of a grid made from two starts;
- :mod:`.figures`: success curves, the diagnostics panel, the 8-group KL shares, the stress
  grid.

``arlarena arena`` (:mod:`arlarena_baselines.cli.arena`) is the command line.
"""

from arlarena_baselines.arena.plan import (
    IS_CLIPPING_METHODS,
    STABILISED_METHODS,
    ArenaPlan,
    RunSpec,
    Setting,
    StressGrid,
    parse_grid,
    plan_runs,
)

__all__ = [
    "IS_CLIPPING_METHODS",
    "STABILISED_METHODS",
    "ArenaPlan",
    "RunSpec",
    "Setting",
    "StressGrid",
    "parse_grid",
    "plan_runs",
]
