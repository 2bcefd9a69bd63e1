"""AUROC, ECE and Brier against brute force."""

import itertools

import numpy as np
import pytest

from agentbon.critic.calibration import auroc, brier, ece, measure


def brute_auroc(y, s):
    pairs = [(a, b) for a, b in itertools.product(range(len(y)), repeat=2) if y[a] and not y[b]]
    return sum(1.0 if s[a] > s[b] else 0.5 if s[a] == s[b] else 0.0 for a, b in pairs) / len(pairs)


@pytest.mark.parametrize("seed", range(5))
def test_auroc_matches_pair_counting_with_ties(seed):
    rng = np.random.default_rng(seed)
    y = rng.random(40) < 0.4
    s = np.round(rng.random(40), 1)  # coarse scores: many ties
    assert auroc(y, s) == pytest.approx(brute_auroc(y, s))


def test_auroc_undefined_for_one_class():
    assert auroc(np.ones(4), np.arange(4)) is None


def test_ece_and_brier():
    y = np.array([1, 0, 1, 0])
    assert ece(y, np.array([1.0, 0.0, 1.0, 0.0])) == 0.0
    assert ece(y, np.full(4, 0.5)) == pytest.approx(0.0)  # one bin, mean 0.5 vs rate 0.5
    assert ece(np.array([1, 1]), np.array([0.25, 0.25])) == pytest.approx(0.75)
    assert brier(y, np.full(4, 0.5)) == pytest.approx(0.25)


# ------------------------------------------------------------------------------------ intervals over tasks


def pair_auroc(y: np.ndarray, s: np.ndarray) -> float:
    """AUROC by counting every (passing, failing) pair: wins, ties half."""
    pos, neg = s[y], s[~y]
    return float(((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])).mean())


def task_draws(tasks: int, resamples: int, seed: int) -> list[np.ndarray]:
    """The task rows each resample draws, as the report's bootstrap draws them (agentbon/metrics/bootstrap.py)."""
    rng = np.random.default_rng(seed)
    return [row for start in range(0, resamples, 64)
            for row in rng.integers(0, tasks, size=(min(64, resamples - start), tasks))]  # fmt: skip


def brute_interval(y, s, rows, tasks, resamples, confidence, seed):
    """The percentile interval of the exact AUROC of each resample's candidates (whole tasks drawn)."""
    values = []
    for draw in task_draws(tasks, resamples, seed):
        idx = np.concatenate([np.flatnonzero(rows == t) for t in draw])
        if y[idx].any() and not y[idx].all():
            values.append(pair_auroc(y[idx], s[idx]))
    tail = (1 - confidence) / 2 * 100
    return np.percentile(values, [tail, 100 - tail])


def calibration_run(seed: int, tasks: int, per_task: int, spread: float):
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(tasks), per_task)
    y = rng.random(tasks * per_task) < rng.uniform(0.1, 0.9, tasks)[rows]
    s = 0.5 + spread * (y + rng.normal(0, 0.8, tasks * per_task))
    return y, s, rows


def test_scores_clustered_in_a_narrow_band_keep_their_ranking_in_the_interval():
    """Every score within 0.02 of 0.5, every passing one above every failing one: AUROC 1.0 in every resample."""
    y, s, rows = calibration_run(0, 8, 5, 0.002)
    s = np.where(y, 0.51, 0.5) + 0.001 * np.random.default_rng(1).random(len(y))
    got = measure(y.astype(float), s, rows, 8, n_boot=200, confidence=0.95, seed=3)["auroc"]
    assert got["mean"] == pair_auroc(y, s) == 1.0
    assert (got["lo"], got["hi"]) == (1.0, 1.0)


@pytest.mark.parametrize("seed", range(6))
def test_the_auroc_interval_is_the_exact_statistic_resampled_over_tasks(seed):
    y, s, rows = calibration_run(seed, 10, 6, 0.01)  # sixty scores within about 0.05: the old bins' width
    got = measure(y.astype(float), s, rows, 10, n_boot=200, confidence=0.9, seed=seed)["auroc"]
    lo, hi = brute_interval(y, s, rows, 10, 200, 0.9, seed)
    assert got["mean"] == pytest.approx(pair_auroc(y, s), abs=1e-12)
    assert got["lo"] == pytest.approx(lo, abs=1e-12) and got["hi"] == pytest.approx(hi, abs=1e-12)
    assert got["lo"] <= got["mean"] <= got["hi"]


def test_with_more_scores_than_rank_bins_the_interval_stays_that_of_the_exact_statistic():
    """400 distinct scores in 50 rank bins: only pairs inside a bin are credited at the bin's own AUROC."""
    for seed in range(3):
        y, s, rows = calibration_run(seed, 40, 10, 0.1)
        got = measure(y.astype(float), s, rows, 40, n_boot=200, confidence=0.9, seed=seed, cells=40 * 20)["auroc"]
        lo, hi = brute_interval(y, s, rows, 40, 200, 0.9, seed)
        assert got["mean"] == pytest.approx(pair_auroc(y, s), abs=1e-12)
        assert got["lo"] == pytest.approx(lo, abs=2e-3) and got["hi"] == pytest.approx(hi, abs=2e-3)


def test_the_auroc_interval_holds_its_point_on_small_runs_with_ties():
    for seed in range(300):
        rng = np.random.default_rng(seed)
        tasks, per_task = int(rng.integers(2, 8)), int(rng.integers(1, 6))
        y, s, rows = calibration_run(seed, tasks, per_task, 0.1)
        s = np.round(s, 1) if seed % 2 else s
        got = measure(y.astype(float), s, rows, tasks, n_boot=200, confidence=0.95, seed=seed)["auroc"]
        if got["lo"] is not None:
            assert got["lo"] <= got["mean"] <= got["hi"], (seed, got)
