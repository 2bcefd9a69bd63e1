"""Metrics as pure functions over per-task arrays (docs/estimators.md): exact, not Monte Carlo.

The one exception is :mod:`agentbon.metrics.softmax_estimate`, soft-bon's unbiased estimate for runs too
large for its exact sum (docs/estimators.md, "soft-bon at scale"); the report says where it used it.

All accuracies are fractions in [0, 1]; a "point" is 0.01. Rendering lives in ``agentbon.report``.
"""

from agentbon.metrics.bootstrap import bootstrap_ci, bootstrap_means, percentile_interval
from agentbon.metrics.combinatorics import log_comb
from agentbon.metrics.cost import (
    BreakEven,
    CostSummary,
    break_even,
    cost_at_k,
    cost_per_extra_point,
    cost_per_solved,
    cost_summary,
    critical_paths,
    kl_bound,
    percentile,
)
from agentbon.metrics.sampling import coverage_curve, gap_recovered, pass_at_k, selected_at_k, selection_loss
from agentbon.metrics.scaling import (
    MIN_DOUBLINGS,
    ONE_POINT,
    LoglinearFit,
    doubling_ks,
    doubling_stops_paying,
    loglinear_fit,
    per_doubling_gains,
    slope_weights,
    tail_slopes,
    verifier_ceiling,
)
from agentbon.metrics.softmax import softmax_selected_at_k

__all__ = [
    "MIN_DOUBLINGS",
    "ONE_POINT",
    "BreakEven",
    "CostSummary",
    "LoglinearFit",
    "bootstrap_ci",
    "bootstrap_means",
    "break_even",
    "cost_at_k",
    "cost_per_extra_point",
    "cost_per_solved",
    "cost_summary",
    "coverage_curve",
    "critical_paths",
    "doubling_ks",
    "doubling_stops_paying",
    "gap_recovered",
    "kl_bound",
    "log_comb",
    "loglinear_fit",
    "pass_at_k",
    "percentile",
    "percentile_interval",
    "per_doubling_gains",
    "selected_at_k",
    "selection_loss",
    "slope_weights",
    "softmax_selected_at_k",
    "tail_slopes",
    "verifier_ceiling",
]
