"""AUROC, ECE and Brier against brute force."""

import itertools

import numpy as np
import pytest

from agentbon.critic.calibration import auroc, brier, ece


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
