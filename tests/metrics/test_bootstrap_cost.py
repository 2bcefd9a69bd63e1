"""Bootstrap intervals over tasks, cost summaries and the best-of-N theory figures."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentbon.metrics import (
    bootstrap_ci,
    bootstrap_means,
    break_even,
    cost_at_k,
    cost_per_extra_point,
    cost_per_solved,
    cost_summary,
    critical_paths,
    kl_bound,
    percentile,
)


def test_bootstrap_is_seeded_and_brackets_the_mean():
    rng = np.random.default_rng(0)
    data = rng.integers(0, 2, (400, 3)).astype(float)
    lo, hi = bootstrap_ci(data, n_boot=500, seed=1)
    lo2, hi2 = bootstrap_ci(data, n_boot=500, seed=1)
    np.testing.assert_array_equal(lo, lo2)
    mean = data.mean(axis=0)
    assert (lo < mean).all() and (mean < hi).all()
    # The 95% interval of a Bernoulli mean over 400 tasks is about ±1.96·sqrt(p(1-p)/400) ≈ ±0.049.
    np.testing.assert_allclose(hi - lo, 2 * 1.96 * np.sqrt(mean * (1 - mean) / 400), rtol=0.25)


def test_bootstrap_resamples_columns_together():
    data = np.random.default_rng(2).random((50, 2))
    data[:, 1] = data[:, 0] + 0.1  # a constant difference survives every resample
    means = bootstrap_means(data, n_boot=200, seed=3)
    np.testing.assert_allclose(means[:, 1] - means[:, 0], 0.1)
    assert bootstrap_means(np.ones((5, 2, 3)), n_boot=4).shape == (4, 2, 3)
    with pytest.raises(ValueError, match="at least one task"):
        bootstrap_means(np.zeros((0, 2)))


def test_cost_summary_and_critical_path():
    task = np.array([0, 0, 1, 1, 1])
    wall = np.array([10.0, 30.0, 5.0, 6.0, 50.0])
    summary = cost_summary(task, [100] * 5, [10] * 5, [40] * 5, [1.0] * 5, wall, tasks=3)
    assert (summary.prompt_tokens, summary.completion_tokens, summary.cached_tokens) == (500, 50, 200)
    assert summary.total_tokens == 550 and summary.sandbox_s == 5.0
    assert summary.wall_p50_s == 10.0 and summary.wall_p99_s == pytest.approx(np.percentile(wall, 99))
    np.testing.assert_array_equal(critical_paths(task, wall, 3), [30.0, 50.0, 0.0])
    assert summary.critical_path_max_s == 50.0
    assert percentile([], 50) == 0.0


def test_cost_per_point_and_per_solved():
    costs = cost_at_k([1, 2, 4], tasks=10, sample_cost=1.0, scoring_cost=0.5)
    np.testing.assert_allclose(costs, [10, 30, 60])  # no scoring needed at k = 1
    per_point = cost_per_extra_point([1, 2, 4], np.array([0.20, 0.25, 0.25]), costs)
    assert per_point[0] == pytest.approx(20 / 5) and per_point[1] == math.inf
    assert cost_per_solved(100.0, 4) == 25.0 and cost_per_solved(1.0, 0) == math.inf


def test_break_even_and_kl_bound():
    be = break_even(training_cost=10_000.0, n=8, sample_cost=2.0, scoring_cost=0.5)
    assert be.extra_cost_per_request == pytest.approx(7 * 2.0 + 8 * 0.5)
    assert be.requests == pytest.approx(10_000 / 18)
    assert break_even(1.0, 1, 2.0, 0.5).requests == math.inf  # N = 1 costs nothing extra
    assert kl_bound(1) == 0.0
    assert kl_bound(16) == pytest.approx(math.log(16) - 15 / 16)
    np.testing.assert_allclose(kl_bound(np.array([2, 4])), [math.log(2) - 0.5, math.log(4) - 0.75])
