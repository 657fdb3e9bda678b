"""Action-flow analysis of evaluation results: why agents fail, step by step.

Classifies every action by type from its text (:mod:`.actions`), turns episodes into paths
of action types and counts transitions and loops (:mod:`.flows`), summarises them per outcome
(:mod:`.summary`) and draws step-wise Sankey graphs (:mod:`.sankey`). ``arlarena analyze``
runs it all on results files.
"""

from arlarena_baselines.analysis.actions import ACTION_TYPES, classify_action, env_family
from arlarena_baselines.analysis.flows import (
    EpisodeFlow,
    Loops,
    action_counts,
    episode_flows,
    find_loops,
    transition_counts,
)
from arlarena_baselines.analysis.sankey import Sankey, build_sankey, write_html, write_pngs
from arlarena_baselines.analysis.summary import analyze, format_analysis, write_loops_csv

__all__ = [
    "ACTION_TYPES",
    "EpisodeFlow",
    "Loops",
    "Sankey",
    "action_counts",
    "analyze",
    "build_sankey",
    "classify_action",
    "env_family",
    "episode_flows",
    "find_loops",
    "format_analysis",
    "transition_counts",
    "write_html",
    "write_loops_csv",
    "write_pngs",
]
