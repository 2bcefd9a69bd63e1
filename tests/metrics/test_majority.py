"""majority's selected@k: a vote inside every k-subset, against enumeration of the subsets."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from agentbon.metrics.majority import exact_majority_work, majority_selected_at_k


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
    assert exact_majority_work(labels) == 200 + 1 * 1 * 2
