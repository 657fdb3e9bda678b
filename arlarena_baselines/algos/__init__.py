"""The policy-optimization zoo: loss aggregation, IS clipping, advantages, filtering, methods.

One module per dimension of ``docs/algorithms.md``, each a set of plain tensor functions
registered by name:

- :mod:`.aggregation`: :func:`aggregate_loss` and its modes;
- :mod:`.clipping`: :class:`PolicyLossConfig`, the policy losses (``ppo_clip``, ``gspo``,
  ``cispo``, ``sapo``) behind :func:`get_policy_loss` / :func:`register_policy_loss`, and
  :func:`sequence_mask`;
- :mod:`.advantage`: ``grpo``, ``gigpo``, ``empg`` behind :func:`get_advantage` /
  :func:`register_advantage`, and :func:`discounted_returns`;
- :mod:`.filtering`: :func:`dynamic_filter`, :class:`DynamicSampler`, :func:`overlong_penalty`;
- :mod:`.kl`: :func:`kl_penalty`;
- :mod:`.methods`: :class:`Method`, :data:`METHODS`, :func:`get_method`,
  :func:`study_method`, :func:`method_table_markdown`, :func:`study_sources_markdown`;
- :mod:`.study`: :data:`STUDY_SETTINGS`, the study's settings of each method per env, each
  with its source line, and :func:`study_env`;
- :mod:`.compose`: :func:`compute_advantages`, :func:`method_policy_loss`,
  :func:`make_sampler` (what a trainer calls);
- :mod:`.diagnostics`: :func:`stability_metrics`, :class:`CollapseDetector`;
- :mod:`.metric_names`: every logged metric key; :mod:`.grouping`, :mod:`.registry`: helpers.
"""

from . import metric_names
from .advantage import (
    ADVANTAGE_ESTIMATORS,
    AdvantageInputs,
    discounted_returns,
    empg_advantage,
    get_advantage,
    gigpo_advantage,
    grpo_advantage,
    register_advantage,
)
from .aggregation import AGG_MODES, aggregate_loss, aggregation_denominator
from .clipping import (
    POLICY_LOSSES,
    PolicyLossConfig,
    get_policy_loss,
    register_policy_loss,
    sequence_mask,
)
from .compose import compute_advantages, make_sampler, method_policy_loss
from .diagnostics import CollapseDetector, stability_metrics
from .filtering import FILTERS, DynamicSampler, dynamic_filter, overlong_penalty
from .grouping import group_index, next_turn_values
from .kl import kl_penalty
from .methods import (
    METHODS,
    Method,
    get_method,
    method_fields,
    method_table_markdown,
    register_method,
    study_method,
    study_sources_markdown,
)
from .registry import Registry, UnknownNameError
from .study import STUDY_SETTINGS, Setting, study_env

__all__ = [
    "ADVANTAGE_ESTIMATORS",
    "AGG_MODES",
    "FILTERS",
    "METHODS",
    "POLICY_LOSSES",
    "STUDY_SETTINGS",
    "AdvantageInputs",
    "CollapseDetector",
    "DynamicSampler",
    "Method",
    "PolicyLossConfig",
    "Registry",
    "Setting",
    "UnknownNameError",
    "aggregate_loss",
    "aggregation_denominator",
    "compute_advantages",
    "discounted_returns",
    "dynamic_filter",
    "empg_advantage",
    "get_advantage",
    "get_method",
    "get_policy_loss",
    "gigpo_advantage",
    "group_index",
    "grpo_advantage",
    "kl_penalty",
    "make_sampler",
    "method_fields",
    "method_policy_loss",
    "method_table_markdown",
    "metric_names",
    "next_turn_values",
    "overlong_penalty",
    "register_advantage",
    "register_method",
    "register_policy_loss",
    "sequence_mask",
    "stability_metrics",
    "study_env",
    "study_method",
    "study_sources_markdown",
]
