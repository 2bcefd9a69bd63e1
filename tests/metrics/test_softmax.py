"""soft-bon's exact selected@k against brute-force enumeration of every k-subset."""

from __future__ import annotations

import numpy as np
import pytest
from softmax_brute import brute

from agentbon.metrics import pass_at_k, selected_at_k, softmax_selected_at_k


@pytest.mark.parametrize("scale", [0.1, 2.0, 30.0, 400.0])
def test_matches_enumeration(scale):
    rng = np.random.default_rng(int(scale * 10))
    for _ in range(12):
        n = int(rng.integers(1, 9))
        logits = rng.normal(size=n) * scale
        logits[rng.random(n) < 0.2] = -np.inf  # weight 0: an invalid candidate
        y = (rng.random(n) < 0.4).astype(float)
        ks = list(range(1, n + 2))  # k = n + 1 is scored as k = n
        got = softmax_selected_at_k(logits, y, ks)
        want = [brute(list(logits), list(y), k) for k in ks]
        np.testing.assert_allclose(got, want, atol=1e-9)


def test_equal_logits_are_a_uniform_choice_and_far_apart_the_argmax():
    y = np.array([1, 0, 0, 1, 0, 0], dtype=float)
    ks = [1, 2, 4, 6]
    np.testing.assert_allclose(softmax_selected_at_k(np.zeros(6), y, ks), [2 / 6] * 4, atol=1e-12)
    far = np.array([0.3, 0.9, 0.1, 0.5, 0.2, 0.7]) * 1e4  # a temperature of 1e-4: the argmax
    np.testing.assert_allclose(softmax_selected_at_k(far, y, ks), selected_at_k(far, y, ks), atol=1e-9)


def test_rows_with_different_sample_counts_and_no_sample():
    logits = np.array([[0.0, 1.0, np.nan], [2.0, 0.5, -1.0], [np.nan, np.nan, np.nan]])
    y = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 1]], dtype=float)
    got = softmax_selected_at_k(logits, y, [1, 2])
    assert got[0] == pytest.approx([brute([0.0, 1.0], [1, 0], k) for k in (1, 2)], abs=1e-12)
    assert got[1] == pytest.approx([brute([2.0, 0.5, -1.0], [0, 1, 1], k) for k in (1, 2)], abs=1e-12)
    assert list(got[2]) == [0.0, 0.0]  # no valid sample
    assert got[:2, 0] == pytest.approx(pass_at_k(np.array([2, 3]), np.array([1, 2]), 1))


def test_large_n_is_a_probability_and_deterministic():
    rng = np.random.default_rng(3)
    logits, y = rng.normal(size=(3, 64)), (rng.random((3, 64)) < 0.3).astype(float)
    a = softmax_selected_at_k(logits, y, [1, 8, 64])
    assert np.array_equal(a, softmax_selected_at_k(logits, y, [1, 8, 64]))
    assert ((a >= 0) & (a <= 1)).all()
    np.testing.assert_allclose(a[:, 0], y.mean(axis=1), atol=1e-12)
    np.testing.assert_allclose(a[:, 2], (np.exp(logits) * y).sum(1) / np.exp(logits).sum(1), atol=1e-10)
