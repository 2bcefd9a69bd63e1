"""Doubling gains, the log-linear fit, and the flags the scaling table raises."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentbon.metrics import (
    doubling_ks,
    doubling_stops_paying,
    log_comb,
    loglinear_fit,
    per_doubling_gains,
    slope_weights,
    tail_slopes,
    verifier_ceiling,
)


def test_doubling_ks():
    assert doubling_ks(1) == [1]
    assert doubling_ks(16) == [1, 2, 4, 8, 16]
    assert doubling_ks(10) == [1, 2, 4, 8, 10]
    with pytest.raises(ValueError):
        doubling_ks(0)


def test_gains_are_differences_per_doubling():
    ks = [1, 2, 4, 8]
    np.testing.assert_allclose(per_doubling_gains(ks, [0.2, 0.3, 0.35, 0.37]), [0.1, 0.05, 0.02])
    # A partial last step (8 -> 12) is scaled to a full doubling.
    assert per_doubling_gains([8, 12], [0.4, 0.4 + math.log2(1.5) * 0.03])[0] == pytest.approx(0.03)
    two_series = np.array([[0.1, 0.2], [0.2, 0.2], [0.3, 0.2]])
    np.testing.assert_allclose(per_doubling_gains([1, 2, 4], two_series), [[0.1, 0.0], [0.1, 0.0]])


def test_loglinear_fit_recovers_line_and_target_k():
    ks = [1, 2, 4, 8, 16]
    values = [0.2 + 0.03 * math.log2(k) for k in ks]
    fit = loglinear_fit(ks, values)
    assert fit.a == pytest.approx(0.2) and fit.b == pytest.approx(0.03) and fit.r2 == pytest.approx(1.0)
    assert fit.k_for(0.35) == pytest.approx(32.0)
    assert fit.k_for(0.1) == 1.0
    noisy = loglinear_fit(ks, [0.2, 0.25, 0.24, 0.31, 0.3])
    assert 0 < noisy.r2 < 1


def test_flat_fit_is_nan_free():
    fit = loglinear_fit([1, 2, 4], [0.4, 0.4, 0.4])
    assert (fit.b, fit.r2) == (pytest.approx(0.0), 1.0)
    assert fit.k_for(0.5) == math.inf and fit.k_for(0.3) == 1.0
    assert loglinear_fit([4], [0.3]).r2 == 1.0


def test_where_doubling_stops_paying_and_the_verifier_ceiling():
    ks = [1, 2, 4, 8, 16]
    coverage = [0.20, 0.30, 0.38, 0.45, 0.51]
    selected = [0.20, 0.26, 0.29, 0.295, 0.30]
    assert doubling_stops_paying(ks, selected) == 4  # 4 -> 8 buys half a point
    assert doubling_stops_paying(ks, coverage) is None
    assert verifier_ceiling(ks, coverage, selected) == 4
    assert verifier_ceiling(ks, coverage, coverage) is None


def test_one_noisy_doubling_does_not_say_stop():
    ks = [1, 2, 4, 8, 16]
    values = np.cumsum([0.20, 0.05, 0.005, 0.095, 0.10])  # gains 5, 0.5, 9.5, 10 points
    assert doubling_stops_paying(ks, values) is None  # the slope from k = 2 on is about 7 points
    assert doubling_stops_paying(ks, np.cumsum([0.2, 0.05, 0.005, 0.004, 0.1])) is None  # the last doubling pays
    assert doubling_stops_paying(ks, np.cumsum([0.2, 0.05, 0.005, 0.004, 0.003])) == 2
    assert doubling_stops_paying([1, 2], [0.2, 0.2]) is None  # one doubling alone never decides


def test_tail_slopes_are_least_squares_and_linear():
    ks = [1, 2, 4, 8]
    values = np.array([0.1, 0.3, 0.35, 0.5])
    slopes = tail_slopes(ks, values)
    assert list(slopes) == [1, 2]  # from 4 on there is one doubling only
    for start, slope in slopes.items():
        i = ks.index(start)
        assert slope == pytest.approx(np.polyfit(np.log2(ks[i:]), values[i:], 1)[0])
    boot = np.stack([values, values * 2])
    np.testing.assert_allclose(tail_slopes(ks, boot)[1], [slopes[1], 2 * slopes[1]])
    assert slope_weights([4]).tolist() == [0.0]


def test_log_comb():
    assert math.exp(log_comb(10, 3)) == pytest.approx(120)
    assert log_comb(3, 5) == -np.inf and log_comb(3, -1) == -np.inf
    assert float(log_comb(1000, 500)) == pytest.approx(math.log(math.comb(1000, 500)), rel=1e-12)
