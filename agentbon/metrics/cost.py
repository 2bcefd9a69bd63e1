"""What the extra compute cost: token and sandbox totals, latency percentiles, cost per point, BoN theory."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def percentile(values: Sequence[float] | np.ndarray, q: float) -> float:
    """The q-th percentile (0..100) of ``values``; 0.0 for no values (never NaN)."""
    arr = np.asarray(values, dtype=np.float64)
    return float(np.percentile(arr, q)) if arr.size else 0.0


def critical_paths(task_index: np.ndarray, wall_s: np.ndarray, tasks: int) -> np.ndarray:
    """Per task, the slowest rollout's wall clock: the task cannot finish before it (0 without rollouts)."""
    out = np.zeros(tasks)
    np.maximum.at(out, np.asarray(task_index, dtype=np.int64), np.asarray(wall_s, dtype=np.float64))
    return out


@dataclass(frozen=True)
class CostSummary:
    """Totals and latency percentiles of a set of rollouts."""

    rollouts: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    sandbox_s: float
    """Seconds of sandbox (container) lifetime, summed."""
    wall_p50_s: float
    wall_p99_s: float
    critical_path_p50_s: float
    """Median over tasks of the slowest rollout of the task."""
    critical_path_p99_s: float
    critical_path_max_s: float

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def cost_summary(
    task_index: np.ndarray,
    prompt_tokens: np.ndarray,
    completion_tokens: np.ndarray,
    cached_tokens: np.ndarray,
    sandbox_s: np.ndarray,
    wall_s: np.ndarray,
    tasks: int,
) -> CostSummary:
    """Summarise per-rollout arrays (one entry per rollout; ``task_index`` in 0..tasks-1)."""
    wall = np.asarray(wall_s, dtype=np.float64)
    paths = critical_paths(task_index, wall, tasks)
    return CostSummary(
        rollouts=int(wall.size),
        prompt_tokens=int(np.sum(prompt_tokens)),
        completion_tokens=int(np.sum(completion_tokens)),
        cached_tokens=int(np.sum(cached_tokens)),
        sandbox_s=float(np.sum(sandbox_s)),
        wall_p50_s=percentile(wall, 50),
        wall_p99_s=percentile(wall, 99),
        critical_path_p50_s=percentile(paths, 50),
        critical_path_p99_s=percentile(paths, 99),
        critical_path_max_s=float(paths.max(initial=0.0)),
    )


def cost_at_k(ks: Sequence[int], tasks: int, sample_cost: float, scoring_cost: float = 0.0) -> np.ndarray:
    """Cost of best-of-k over ``tasks``: k samples each, plus k scorings once there is a choice (k > 1)."""
    k = np.asarray(ks, dtype=np.float64)
    return tasks * (k * sample_cost + np.where(k > 1, k * scoring_cost, 0.0))


def cost_per_solved(cost: float, solved: float) -> float:
    """Cost per solved task; ``inf`` when nothing was solved."""
    return cost / solved if solved > 0 else math.inf


def cost_per_extra_point(ks: Sequence[int], metric: np.ndarray, costs: np.ndarray) -> np.ndarray:
    """Marginal cost of one percentage point between consecutive ks (``inf`` where a step buys nothing)."""
    points = np.diff(np.asarray(metric, dtype=np.float64)) * 100
    spent = np.diff(np.asarray(costs, dtype=np.float64))
    safe = np.where(points > 1e-12, points, 1.0)
    return np.where(points > 1e-12, spent / safe, math.inf)


@dataclass(frozen=True)
class BreakEven:
    """Best-of-N versus a one-off RL run that reaches the same accuracy at N = 1."""

    n: int
    extra_cost_per_request: float
    """(N − 1) extra samples plus N scorings, paid on every request."""
    requests: float
    """Traffic after which the RL run is cheaper: training cost / extra cost per request."""


def break_even(training_cost: float, n: int, sample_cost: float, scoring_cost: float) -> BreakEven:
    """RL pays ``training_cost`` once; BoN pays ``(n−1)·sample + n·scoring`` per request: where they meet."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    extra = (n - 1) * sample_cost + (n * scoring_cost if n > 1 else 0.0)
    return BreakEven(n=n, extra_cost_per_request=extra, requests=training_cost / extra if extra > 0 else math.inf)


def kl_bound(n: int | np.ndarray) -> float | np.ndarray:
    """Upper bound on KL(best-of-N ‖ base) in nats: ``log N − (N−1)/N`` (0 at N = 1)."""
    arr = np.asarray(n, dtype=np.float64)
    if (arr < 1).any():
        raise ValueError("kl_bound needs N >= 1")
    out = np.log(arr) - (arr - 1) / arr
    return float(out) if out.ndim == 0 else out
