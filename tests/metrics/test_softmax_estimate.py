"""soft-bon's estimated selected@k: unbiased against the exact sum, its standard error honest, exact at its ends."""

from __future__ import annotations

import numpy as np
import pytest

from agentbon.metrics import softmax_selected_at_k
from agentbon.metrics.softmax_estimate import _draws
from agentbon.metrics.softmax_estimate import softmax_selected_at_k_estimate as estimate


def _run(seed: int, tasks: int = 6, n: int = 7, scale: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(tasks, n)) * scale
    logits[rng.random((tasks, n)) < 0.15] = -np.inf  # weight 0: not a candidate
    logits[rng.random((tasks, n)) < 0.15] = np.nan  # not a sample
    correct = (rng.random((tasks, n)) < rng.random((tasks, 1))).astype(float)
    return logits, correct


@pytest.mark.parametrize("scale", [0.3, 2.0, 20.0])
def test_each_kind_of_draw_is_unbiased(scale):
    # 20,000 draws of each estimator per task (the tasks tiled, one draw each): a control variate whose mean is
    # not 0, a ranking that treats weight-0 samples wrongly or a subset that is not uniform shows far beyond 5 s.e.
    logits, correct = _run(int(scale * 10), scale=scale)
    ks = np.array([1, 2, 3, 5, 7])
    exact = np.asarray(softmax_selected_at_k(logits, correct, ks))
    copies = 20_000
    valid = ~np.isnan(logits)
    g, p = _draws(*(np.tile(a, (copies, 1)) for a in (logits, np.where(valid, correct, 0.0), valid)), ks, np.random.default_rng(0), 1)
    for drawn in (g[0], p[0]):
        per = drawn.reshape(copies, *exact.shape)
        error = np.abs(per.mean(axis=0) - exact)
        # + 5 / copies: an event no draw saw (a logit far behind drawn first; unseen in 20,000 draws with chance
        # under e^-5 only when its rate is below 5 / copies) moves the mean by at most its rate.
        assert (error <= 5 * per.std(axis=0) / np.sqrt(copies) + 5 / copies).all()


def test_the_blend_over_seeds_is_the_exact_value():
    # Blend weights read the same draws they blend: a bias; here they come from a pilot's own draws.
    logits, correct = _run(8, tasks=30, n=10, scale=1.0)
    ks = [1, 2, 4, 8, 10]
    exact = np.asarray(softmax_selected_at_k(logits, correct, ks)).mean(axis=0)
    runs = np.stack([estimate(logits, correct, ks, seed=seed).values.mean(axis=0) for seed in range(300)])
    assert (np.abs(runs.mean(axis=0) - exact) <= 5 * runs.std(axis=0) / np.sqrt(len(runs)) + 1e-12).all()


def test_the_standard_error_is_the_spread_over_seeds():
    logits, correct = _run(7, tasks=40, n=12)
    ks = [2, 4, 8]
    runs = [estimate(logits, correct, ks, seed=seed) for seed in range(200)]
    spread = np.stack([r.values[np.isfinite(logits).any(axis=1) | ~np.isnan(logits).all(axis=1)].mean(axis=0) for r in runs]).std(axis=0)
    reported = np.mean([r.se for r in runs], axis=0)
    assert (reported > 0.7 * spread).all() and (reported < 1.4 * spread).all()
    with_draws = estimate(logits, correct, ks, draws=8, seed=1)
    assert (with_draws.se < 0.6 * reported).all()  # eight draws: about a third of one draw's error


def test_k_1_and_k_n_are_exact_in_every_draw():
    logits, correct = _run(3, tasks=5, n=9)
    logits = np.where(np.isnan(logits), -1.0, logits)  # every row holds 9 samples
    got = estimate(logits, correct, [1, 9], seed=11)
    exact = np.asarray(softmax_selected_at_k(logits, correct, [1, 9]))
    np.testing.assert_allclose(got.values, exact, atol=1e-9)
    assert got.se == pytest.approx([0.0, 0.0], abs=1e-9)


def test_weight_0_rows_are_a_uniform_choice_and_empty_rows_score_0():
    logits = np.array([[-np.inf] * 4, [np.nan] * 4, [0.0, -np.inf, np.nan, 1.0]])
    correct = np.array([[1, 0, 0, 1], [1, 1, 1, 1], [0, 1, 1, 1]], dtype=float)
    runs = np.stack([estimate(logits, correct, [1, 2, 3], seed=s).values for s in range(300)])
    exact = np.asarray(softmax_selected_at_k(logits, correct, [1, 2, 3]))
    assert exact[0] == pytest.approx([0.5] * 3)
    np.testing.assert_allclose(runs.mean(axis=0), exact, atol=0.03)
    assert (runs[:, 1] == 0).all()


def test_deterministic_for_a_seed_and_large_runs_are_probabilities():
    rng = np.random.default_rng(5)
    logits, correct = rng.normal(size=(12, 256)), (rng.random((12, 256)) < 0.3).astype(float)
    a, b = estimate(logits, correct, [1, 16, 256], seed=4), estimate(logits, correct, [1, 16, 256], seed=4)
    assert np.array_equal(a.values, b.values) and np.array_equal(a.se, b.se)
    assert not np.array_equal(a.values, estimate(logits, correct, [1, 16, 256], seed=5).values)
    exact = np.asarray(softmax_selected_at_k(logits, correct, [1, 16, 256]))
    assert abs(a.values[:, 1].mean() - exact[:, 1].mean()) < 5 * a.se[1] + 1e-12


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="draws"):
        estimate(np.zeros((1, 3)), np.zeros((1, 3)), [1], draws=0)
    with pytest.raises(ValueError, match="finite or -inf"):
        estimate(np.array([[0.0, np.inf]]), np.zeros((1, 2)), [1])
    with pytest.raises(ValueError, match="same 1-D or 2-D shape"):
        estimate(np.zeros((2, 3)), np.zeros((2, 4)), [1])
