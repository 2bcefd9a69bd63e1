"""The tournament's selected@k (metrics/tournament.py) against brute force written here, independently: on every
k-subset, the pool is the candidates of the highest group present, each pool member's count is the sum of its
probabilities against the other pool members (a pair never compared: 1/2), and the highest count wins, ties
uniformly. Plain Python with fractions, no numpy, no shared helper."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from agentbon.metrics.softmax_estimate import SampledEstimate
from agentbon.metrics.tournament import UNIT, UNSEEN, next_pair, tournament_selected_at_k


def brute(groups: list[float | None], p: dict[tuple[int, int], Fraction], y: list[int], k: int) -> float:
    """``groups[i]``: None for a sample that is no candidate; ``p[(i, j)]``: i better than j (absent: unseen)."""
    n = len(groups)
    total, count = Fraction(0), 0
    for subset in itertools.combinations(range(n), min(k, n)):
        count += 1
        cands = [i for i in subset if groups[i] is not None]
        if not cands:
            continue
        top = max(groups[i] for i in cands)  # type: ignore[type-var]
        pool = [i for i in cands if groups[i] == top]
        score = {i: sum((p.get((i, j), Fraction(1, 2)) for j in pool if j != i), Fraction(0)) for i in pool}
        best = max(score.values())
        winners = [i for i in pool if score[i] == best]
        total += Fraction(sum(y[i] for i in winners), len(winners))
    return float(total / count)


def random_task(rng: np.random.Generator, n: int, grouped: bool, coverage: float = 1.0):
    groups: list[float | None] = []
    for _ in range(n):
        if rng.random() < 0.15:
            groups.append(None)
        else:
            groups.append(float(rng.integers(0, 3)) if grouped else 0.0)
    y = [int(rng.random() < 0.4) for _ in range(n)]
    p: dict[tuple[int, int], Fraction] = {}
    q = np.full((n, n), UNSEEN, np.int64)
    for i, j in itertools.combinations(range(n), 2):
        if groups[i] is None or groups[j] is None or groups[i] != groups[j] or rng.random() > coverage:
            continue
        v = Fraction(int(rng.integers(0, 5)), 4)  # coarse: ties, and cycles
        p[(i, j)], p[(j, i)] = v, 1 - v
        q[i, j], q[j, i] = int(v * UNIT), int((1 - v) * UNIT)
    scores = np.array([-np.inf if g is None else g + 0.5 * rng.random() for g in groups])
    return groups, p, y, q, scores


@pytest.mark.parametrize("case", range(40))
def test_exact_selected_at_k_is_brute_force(case):
    rng = np.random.default_rng(case)
    n = int(rng.integers(1, 8))
    groups, p, y, q, scores = random_task(rng, n, grouped=case % 2 == 1, coverage=1.0 if case % 3 else 0.6)
    ks = [1, 2, 3, 4, 7]
    got = tournament_selected_at_k(scores[None, :], np.array([y], float), {0: q}, ks)
    assert isinstance(got, np.ndarray)
    assert got[0] == pytest.approx([brute(groups, p, y, k) for k in ks], abs=1e-12)


def test_a_cycle_on_subsets():
    # 0 beats 1, 1 beats 2, 2 beats 0 (each 3/4): the whole set ties (uniform), a pair has a clear winner.
    q = np.array([[UNSEEN, 750_000, 250_000], [250_000, UNSEEN, 750_000], [750_000, 250_000, UNSEEN]])
    y = np.array([[1.0, 0.0, 0.0]])
    got = tournament_selected_at_k(np.zeros((1, 3)), y, {0: q}, [1, 2, 3])
    # k = 2: {0,1} -> 0 (right), {0,2} -> 2, {1,2} -> 1: 1/3. k = 3: a three-way tie: 1/3.
    assert got[0] == pytest.approx([1 / 3, 1 / 3, 1 / 3])
    q[0, 2], q[2, 0] = 600_000, 400_000  # 0 now beats 2 as well: it wins the whole set and both its pairs
    got = tournament_selected_at_k(np.zeros((1, 3)), y, {0: q}, [1, 2, 3])
    assert got[0] == pytest.approx([1 / 3, 2 / 3, 1.0])


def test_samples_that_are_not_cells_and_tasks_without_comparisons():
    # NaN: not a sample of the curves; a row without a matrix has no comparison (every pair a tie: uniform).
    scores = np.array([[0.0, np.nan, 0.0, -np.inf], [0.0, 0.0, np.nan, np.nan]])
    y = np.array([[1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    q = np.full((4, 4), UNSEEN)
    q[0, 2], q[2, 0] = 0, UNIT  # 2 beats 0
    got = tournament_selected_at_k(scores, y, {0: q}, [1, 2, 3])
    # Task 0: samples 0, 2, 3 (3 is no candidate). k=1: 1/3 (only {0} right). k=2: {0,2}->2, {0,3}->0, {2,3}->2:
    # 1/3. k=3: 2 wins: 0.
    assert got[0] == pytest.approx([1 / 3, 1 / 3, 0.0])
    assert got[1] == pytest.approx([0.5, 0.5, 0.5])


def test_the_estimate_is_unbiased_and_says_its_error():
    rng = np.random.default_rng(7)
    groups, p, y, q, scores = random_task(rng, 9, grouped=True)
    ks = [2, 4, 5]
    exact = [brute(groups, p, y, k) for k in ks]
    draws = []
    ses = []
    for seed in range(200):
        got = tournament_selected_at_k(scores[None, :], np.array([y], float), {0: q}, ks, seed=seed, draws=64,
                                       max_subsets=10)  # fmt: skip
        assert isinstance(got, SampledEstimate) and got.draws == 64
        draws.append(got.values[0])
        ses.append(got.se)
    mean, spread = np.mean(draws, axis=0), np.std(draws, axis=0, ddof=1)
    assert (np.abs(mean - exact) <= 5 * spread / math.sqrt(len(draws)) + 1e-12).all()
    assert np.mean(ses, axis=0) == pytest.approx(spread, rel=0.25)  # the reported error is the draws' spread


def test_next_pair_goes_where_the_winner_is_undecided():
    groups = {0: 1.0, 1: 1.0, 2: 1.0, 3: 0.0, 4: 0.0}
    assert next_pair(groups, {}, set()) == (0, 1)  # the higher group first, lowest positions on a tie
    seen = {(0, 1): 1.0}  # 0 beat 1: now 0 against 2 (both could still be best) before 1 against 2
    assert next_pair(groups, seen, set(seen)) == (0, 2)
    seen = {(0, 1): 1.0, (0, 2): 1.0, (1, 2): 0.5}
    assert next_pair(groups, seen, set(seen)) == (3, 4)  # the top group is done: the next group's pair
    assert next_pair(groups, {**seen, (3, 4): 0.5}, {*seen, (3, 4)}) is None
