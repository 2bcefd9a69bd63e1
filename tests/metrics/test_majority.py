"""majority's selected@k: a vote inside every k-subset, against enumeration of the subsets."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from agentbon.metrics.majority import exact_majority_work, majority_selected_at_k
from agentbon.metrics.majority_estimate import majority_selected_at_k_estimate as estimate


def brute(labels: list[float], y: list[float], k: int) -> float:
    """Mean over every k-subset of the samples (NaN: none) of the vote's expected correctness: the largest cluster of
    candidates (-inf: no candidate) wins, ties uniform, then a uniform member of it."""
    samples = [i for i, v in enumerate(labels) if not np.isnan(v)]
    total, count = 0.0, 0
    for subset in itertools.combinations(samples, min(k, len(samples))):
        votes = Counter(labels[i] for i in subset if labels[i] > -np.inf)
        count += 1
        if votes:
            top = max(votes.values())
            tied = [c for c, m in votes.items() if m == top]
            total += sum(np.mean([y[i] for i in subset if labels[i] == c]) for c in tied) / len(tied)
    return total / count if count else 0.0


def test_the_issues_example():
    # Three identical wrong patches, two identical right ones.
    labels, y = [0.0, 0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0, 1.0]
    assert majority_selected_at_k(labels, y, [1, 2, 4, 5]) == pytest.approx([0.4, 0.4, 0.3, 0.0], abs=1e-12)
    assert majority_selected_at_k(labels, y, 2) == pytest.approx(brute(labels, y, 2))


@pytest.mark.parametrize("seed", range(40))
def test_random_rows_against_enumeration(seed):
    rng = np.random.default_rng(seed)
    tasks, n = 3, int(rng.integers(1, 10))
    labels = rng.integers(0, int(rng.integers(1, 5)), size=(tasks, n)).astype(float)
    labels[rng.random((tasks, n)) < 0.2] = -np.inf
    labels[rng.random((tasks, n)) < 0.15] = np.nan
    y = np.where(rng.random((tasks, n)) < 0.2, rng.random((tasks, n)), (rng.random((tasks, n)) < 0.5).astype(float))
    ks = list(range(1, n + 2))
    got = np.asarray(majority_selected_at_k(labels, y, ks))
    want = [[brute(list(labels[t]), list(y[t]), k) for k in ks] for t in range(tasks)]
    assert got == pytest.approx(np.array(want), abs=1e-12)


def test_larger_clusters_against_enumeration():
    # n = 14 with clusters of 1 to 5 members: layers up to j = 5, several sizes per layer.
    labels = [0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 4, -np.inf, 5.0]
    y = [0, 0, 0, 0, 0, 1, 1, 1, 1, 0.5, 1, 0, 1, 1.0]
    ks = [1, 2, 3, 4, 6, 7, 9, 13, 14]
    assert majority_selected_at_k(labels, y, ks) == pytest.approx([brute(labels, y, k) for k in ks], abs=1e-12)


def test_singletons_are_a_uniform_choice_and_work_counts_only_clusters():
    labels = np.array([[0.0, 1.0, 2.0, -np.inf], [0.0, 0.0, 1.0, np.nan]])
    y = np.array([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    got = np.asarray(majority_selected_at_k(labels, y, [1, 2, 4]))
    assert got[0] == pytest.approx([1 / 4, 1 / 3, 1 / 3])  # a candidate's mean, times P(the subset holds one)
    assert got[1] == pytest.approx([brute(list(labels[1]), list(y[1]), k) for k in (1, 2, 4)])
    assert exact_majority_work(labels) == 500 + 3 * 2 * 5  # one cluster of two: b = 1, m(m + 3)/2 = 5


def _run(seed: int, tasks: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n // 2 + 1, size=(tasks, n)).astype(float)  # clusters of several members
    labels[rng.random((tasks, n)) < 0.1] = -np.inf
    labels[rng.random((tasks, n)) < 0.1] = np.nan
    correct = (rng.random((tasks, n)) < rng.random((tasks, 1))).astype(float)
    return labels, correct


def test_the_estimate_is_unbiased_and_its_standard_error_honest():
    labels, correct = _run(3, tasks=30, n=12)
    ks = [1, 2, 4, 8, 12]
    exact = np.asarray(majority_selected_at_k(labels, correct, ks))
    runs = [estimate(labels, correct, ks, seed=seed) for seed in range(300)]
    means = np.stack([r.values.mean(axis=0) for r in runs])
    assert (np.abs(means.mean(axis=0) - exact.mean(axis=0)) <= 5 * means.std(axis=0) / np.sqrt(300) + 1e-12).all()
    spread, reported = means.std(axis=0), np.mean([r.se for r in runs], axis=0)
    # k <= 2: the vote is the uniform choice (one cluster, or a tie), exact in every draw; so is k = n.
    assert spread[[0, 1, 4]] == pytest.approx(0.0, abs=1e-12) and reported[[0, 1, 4]] == pytest.approx(0.0, abs=1e-12)
    assert (reported[2:4] > 0.7 * spread[2:4]).all() and (reported[2:4] < 1.4 * spread[2:4]).all()
    assert (estimate(labels, correct, ks, draws=8, seed=1).se[2:4] < 0.6 * reported[2:4]).all()


def test_each_draw_is_unbiased_on_tiled_rows():
    # 20,000 draws per task (the tasks tiled, one draw each): a vote kept wrongly or a biased correction shows.
    labels, correct = _run(5, tasks=4, n=9)
    ks = [2, 3, 5, 7]
    exact = np.asarray(majority_selected_at_k(labels, correct, ks))
    copies = 20_000
    got = estimate(np.tile(labels, (copies, 1)), np.tile(correct, (copies, 1)), ks, seed=2).values
    per = got.reshape(copies, *exact.shape)
    assert (np.abs(per.mean(axis=0) - exact) <= 5 * per.std(axis=0) / np.sqrt(copies) + 1e-12).all()
