"""pass@k and selected@k against brute-force enumeration, exact rationals and Monte Carlo."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from agentbon.metrics import coverage_curve, gap_recovered, pass_at_k, selected_at_k, selection_loss


def brute_pass(y: list[int], k: int) -> float:
    subsets = list(itertools.combinations(range(len(y)), k))
    return sum(any(y[i] for i in s) for s in subsets) / len(subsets)


def brute_selected(scores: list[float], y: list[float], k: int) -> float:
    """Mean over every k-subset of the mean correctness of its top-scored members (uniform tie break)."""
    total = 0.0
    subsets = list(itertools.combinations(range(len(y)), k))
    for s in subsets:
        best = max(scores[i] for i in s)
        top = [y[i] for i in s if scores[i] == best]
        total += sum(top) / len(top)
    return total / len(subsets)


def exact_selected(scores: list[float], y: list[int], k: int) -> Fraction:
    """The group formula in exact rationals (math.comb), for large n."""
    n = len(y)
    out, above = Fraction(0), 0
    for value in sorted(set(scores), reverse=True):
        members = [y[i] for i in range(n) if scores[i] == value]
        t = len(members)
        weight = Fraction(math.comb(n - above, k) - math.comb(n - above - t, k), math.comb(n, k))
        out += weight * Fraction(sum(members), t)
        above += t
    return out


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_matches_enumeration(n):
    rng = np.random.default_rng(n)
    for _ in range(5):
        y = rng.integers(0, 2, n).tolist()
        for k in range(1, n + 1):
            assert pass_at_k(n, sum(y), k) == pytest.approx(brute_pass(y, k), abs=1e-12)


@pytest.mark.parametrize("n", range(1, 9))
def test_selected_at_k_matches_enumeration_with_ties(n):
    rng = np.random.default_rng(100 + n)
    for _ in range(6):
        scores = rng.integers(0, 3, n).astype(float).tolist()  # few distinct values: many ties
        y = rng.integers(0, 2, n).tolist()
        got = selected_at_k(np.array(scores), np.array(y), list(range(1, n + 1)))
        want = [brute_selected(scores, y, k) for k in range(1, n + 1)]
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_fractional_correctness_matches_enumeration():
    scores, y = [0.5, 0.5, 0.1, 0.9, 0.1, 0.3], [0.25, 1.0, 0.5, 0.0, 1.0, 0.75]
    for k in range(1, 7):
        assert selected_at_k(np.array(scores), np.array(y), k) == pytest.approx(brute_selected(scores, y, k), abs=1e-12)


def test_selected_matches_monte_carlo():
    rng = np.random.default_rng(7)
    n, k, draws = 40, 8, 100_000
    scores = rng.integers(0, 6, n).astype(float)
    y = rng.integers(0, 2, n).astype(float)
    subsets = np.argsort(rng.random((draws, n)), axis=1)[:, :k]
    s = scores[subsets] + rng.random((draws, k)) * 1e-3  # uniform tie break within equal integer scores
    picked = y[subsets[np.arange(draws), s.argmax(axis=1)]]
    assert selected_at_k(scores, y, k) == pytest.approx(picked.mean(), abs=4 * 0.5 / math.sqrt(draws))


@pytest.mark.parametrize("n", [256, 300, 512])
def test_large_n_is_exact_to_1e10(n):
    rng = np.random.default_rng(n)
    scores = rng.integers(0, 20, n).astype(float).tolist()
    y = rng.integers(0, 2, n).tolist()
    ks = [1, 2, 8, 64, 128, n - 1, n]
    got = selected_at_k(np.array(scores), np.array(y), ks)
    for value, k in zip(got, ks, strict=True):
        assert value == pytest.approx(float(exact_selected(scores, y, k)), abs=1e-10)
        c = sum(y)
        assert pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-10)


def test_oracle_scores_give_coverage_and_constant_scores_give_pass1():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, (50, 32)).astype(float)
    ks = [1, 2, 4, 8, 16, 32]
    c = y.sum(axis=1)
    np.testing.assert_allclose(selected_at_k(y, y, ks), pass_at_k(32, c, ks), atol=1e-12)
    constant = selected_at_k(np.zeros_like(y), y, ks)
    np.testing.assert_allclose(constant, np.repeat((c / 32)[:, None], len(ks), axis=1), atol=1e-12)


def test_edge_cases():
    assert pass_at_k(10, 0, 3) == 0.0
    assert pass_at_k(10, 10, 3) == 1.0
    assert pass_at_k(10, 3, 10) == 1.0  # k = n
    assert pass_at_k(10, 3, 8) == 1.0  # k > n - c: every subset holds a correct one
    assert pass_at_k(5, 0, 9) == 0.0 and pass_at_k(5, 2, 9) == 1.0  # k > n behaves as k = n
    assert pass_at_k(0, 0, 1) == 0.0  # no valid sample: unsolved
    y = np.array([1.0, 0, 0, 0])
    assert selected_at_k(np.array([0.0, 1, 1, 1]), y, 4) == 0.0  # k = n: the top group always wins
    assert selected_at_k(np.array([2.0, 1, 1, 1]), y, 9) == 1.0
    np.testing.assert_allclose(selected_at_k(np.full(4, 7.0), y, [1, 2, 4]), 0.25, atol=1e-15)
    with pytest.raises(ValueError, match="k must be >= 1"):
        pass_at_k(4, 1, 0)
    with pytest.raises(ValueError, match="c <= n"):
        pass_at_k(4, 5, 1)


def test_infinite_scores_invalid_samples_and_empty_rows_are_nan_free():
    scores = np.array([[np.inf, -np.inf, 0.0, np.nan], [np.nan] * 4, [-np.inf] * 4])
    y = np.array([[0.0, 1, 1, 1], [1, 1, 1, 1], [1, 0, 0, 0]])
    got = selected_at_k(scores, y, [1, 2, 3, 4])
    assert np.isfinite(got).all()
    # Row 0: the NaN-scored sample is not valid (n = 3); brute force on the 3 valid ones.
    for i, k in enumerate([1, 2, 3, 3]):
        assert got[0, i] == pytest.approx(brute_selected([1e9, -1e9, 0.0], [0, 1, 1], k))
    assert got[1].tolist() == [0.0] * 4  # no valid sample
    np.testing.assert_allclose(got[2], 0.25, atol=1e-15)  # all tied at -inf: pass@1


def test_rows_with_different_n_match_row_by_row():
    rng = np.random.default_rng(11)
    scores = rng.random((30, 16)).round(1)
    y = rng.integers(0, 2, (30, 16)).astype(float)
    valid = rng.random((30, 16)) > 0.3
    ks = [1, 2, 4, 8, 16]
    batch = selected_at_k(scores, y, ks, valid=valid)
    for row in range(30):
        m = valid[row]
        if m.any():
            np.testing.assert_allclose(batch[row], selected_at_k(scores[row][m], y[row][m], ks), atol=1e-12)
        else:
            assert (batch[row] == 0).all()


def test_coverage_curve_and_derived_quantities():
    n, c = np.array([4, 4, 4]), np.array([0, 1, 4])
    curve = coverage_curve(n, c, [1, 2, 4])
    np.testing.assert_allclose(curve, [(0 + 0.25 + 1) / 3, (0 + 0.5 + 1) / 3, (0 + 1 + 1) / 3])
    assert selection_loss(0.7, 0.5) == pytest.approx(0.2)
    assert gap_recovered(0.5, 0.7, 0.3) == pytest.approx(0.5)
    assert gap_recovered(0.3, 0.3, 0.3) == 1.0  # k = 1: no gap to recover, never NaN


def test_mismatched_shapes_are_named():
    with pytest.raises(ValueError, match="same 1-D or 2-D shape"):
        selected_at_k(np.zeros(3), np.zeros(4), 1)


def test_minus_infinity_scores_next_to_invalid_samples_match_enumeration():
    rng = np.random.default_rng(21)
    for _ in range(20):
        scores = rng.choice([-np.inf, 0.0, 1.0, np.inf], size=7)
        y = rng.integers(0, 2, 7).astype(float)
        valid = rng.random(7) > 0.3
        if not valid.any():
            continue
        got = selected_at_k(scores[None, :], y[None, :], list(range(1, 8)), valid=valid[None, :])[0]
        vs, vy = scores[valid].tolist(), y[valid].tolist()
        want = [brute_selected(vs, vy, min(k, len(vs))) for k in range(1, 8)]
        np.testing.assert_allclose(got, want, atol=1e-12)
