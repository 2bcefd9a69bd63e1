"""A pairwise tournament's selected@k, from the comparisons it recorded (docs/estimators.md, "tournament").

The tournament's choice on a set of samples is a pure function of the comparisons among them:

- its **pool** is the candidates of the highest group present (a candidate's group is the integer part of its
  recorded score: the evidence tier for ``tests-then-tournament``, 0 for ``tournament``); a sample that is no
  candidate (score ``-inf``) is never chosen;
- each pool member's **soft Borda count** is the sum, over the other pool members, of its recorded probability of
  being the better one (``q[i, j]``, in millionths, both orders of asking averaged); a pair never compared counts
  as a tie (half a win each);
- the highest count wins, exact ties uniformly.

The counts are integers (millionths), so ties are exact in the selector and here alike. On a k-subset the
tournament compares only the subset's members: the same function of the comparisons restricted to the subset.
The comparisons are recorded once per task and read by every subset (never asked again).

``tournament_selected_at_k`` averages that choice over the uniform k-subsets of each task's samples: exactly (every
subset) where a task has at most ``MAX_SUBSETS`` of them, else from ``draws`` uniform k-subsets drawn
independently, an unbiased estimate whose Monte Carlo standard error is returned beside it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from agentbon.metrics.sampling import Ks, _ks
from agentbon.metrics.softmax_estimate import SampledEstimate

UNIT = 1_000_000
"""A recorded probability in integer millionths: sums of them tie exactly or not at all."""
UNSEEN = -1
"""A pair never compared (``q`` entry); it counts as ``UNIT // 2`` (a tie)."""
MAX_SUBSETS = 4096
"""Most k-subsets of one task summed exactly at one k; beyond, ``draws`` uniform ones are drawn."""
DRAWS = 2048
"""Uniform k-subsets drawn per task and k where the exact sum is too large."""


def units(p: float) -> int:
    """A probability in integer millionths, clipped to [0, 1]."""
    return int(round(min(max(float(p), 0.0), 1.0) * UNIT))


def soft_borda(q: np.ndarray, pool: Sequence[int]) -> dict[int, int]:
    """Each pool member's soft Borda count among the pool (millionths; unseen pairs a tie)."""
    sub = np.asarray(q, dtype=np.int64)[np.ix_(pool, pool)]
    sub = np.where(sub == UNSEEN, UNIT // 2, sub)
    np.fill_diagonal(sub, 0)
    return {i: int(v) for i, v in zip(pool, sub.sum(axis=1), strict=True)}


def _subset_values(group: np.ndarray, q: np.ndarray, y: np.ndarray, subs: np.ndarray) -> np.ndarray:
    """Expected correctness of the tournament's choice on each subset (rows of ``subs``: sample positions)."""
    g = group[subs]  # (C, k); -inf: no candidate
    top = g.max(axis=1, keepdims=True)
    pool = np.isfinite(g) & (g == top)
    pair = q[subs[:, :, None], subs[:, None, :]]  # (C, k, k)
    pair = np.where(pair == UNSEEN, UNIT // 2, pair)
    k = subs.shape[1]
    pair[:, np.arange(k), np.arange(k)] = 0
    counts = np.where(pool, (pair * pool[:, None, :]).sum(axis=2), -1)
    win = pool & (counts == counts.max(axis=1, keepdims=True))
    chosen = win.sum(axis=1)
    return np.where(chosen > 0, (win * y[subs]).sum(axis=1) / np.maximum(chosen, 1), 0.0)


def task_selected_at_k(
    group: np.ndarray, q: np.ndarray, y: np.ndarray, ks: Sequence[int], rng: np.random.Generator,
    draws: int = DRAWS, max_subsets: int = MAX_SUBSETS,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """One task's selected@k per k and the Monte Carlo variance of each value (0 where exact).

    ``group``: per sample, its group (``-inf`` for a sample that is no candidate); ``q``: the comparisons in
    millionths (``UNSEEN`` where none); ``y``: per sample, its correctness. ``k > n`` is scored as ``k = n``.
    """
    n = len(group)
    values, variances = np.zeros(len(ks)), np.zeros(len(ks))
    if n == 0:
        return values, variances
    q = np.asarray(q, dtype=np.int64)
    for j, k in enumerate(ks):
        k = min(int(k), n)
        if math.comb(n, k) <= max_subsets:
            subs = np.array(list(itertools.combinations(range(n), k)), dtype=np.int64).reshape(-1, k)
            values[j] = float(_subset_values(group, q, y, subs).mean())
        else:
            subs = np.argsort(rng.random((draws, n)), axis=1)[:, :k]  # uniform k-subsets, drawn independently
            got = _subset_values(group, q, y, subs)
            values[j] = float(got.mean())
            variances[j] = float(got.var(ddof=1)) / draws if draws > 1 else 0.0
    return values, variances


def tournament_selected_at_k(
    scores: np.ndarray, correct: np.ndarray, prefs: Mapping[int, np.ndarray], k: Ks, seed: int = 0,
    draws: int = DRAWS, max_subsets: int = MAX_SUBSETS,
) -> np.ndarray | SampledEstimate:  # fmt: skip
    """Per task and k, the expected correctness of the tournament's choice on a uniform k-subset of the task's samples.

    ``scores`` (tasks, n): NaN where a cell is no sample, ``-inf`` for a sample that is no candidate, else the
    recorded score (its integer part is the candidate's group); ``correct`` (tasks, n); ``prefs``: per task row, its
    (n, n) comparisons in millionths (``UNSEEN`` where none; a row without one has no comparison at all). Exact
    (an array) where every task and k has at most ``max_subsets`` subsets, else a :class:`SampledEstimate`.
    """
    ks, _ = _ks(k)
    s = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    y = np.atleast_2d(np.asarray(correct, dtype=np.float64))
    rng = np.random.default_rng(seed)
    values, variances = np.zeros((s.shape[0], ks.size)), np.zeros((s.shape[0], ks.size))
    for row in range(s.shape[0]):
        cells = np.flatnonzero(~np.isnan(s[row]))
        if cells.size == 0:
            continue
        group = np.floor(s[row, cells])  # -inf stays -inf
        full = prefs.get(row)
        q = np.full((s.shape[1], s.shape[1]), UNSEEN, np.int64) if full is None else np.asarray(full, np.int64)
        values[row], variances[row] = task_selected_at_k(
            group, q[np.ix_(cells, cells)], y[row, cells], [int(x) for x in ks], rng, draws, max_subsets
        )
    if not variances.any():
        return values
    tasks = max(int((~np.isnan(s)).any(axis=1).sum()), 1)
    return SampledEstimate(values=values, se=np.sqrt(variances.sum(axis=0)) / tasks, draws=draws)


def next_pair(
    groups: Mapping[int, float], seen: Mapping[tuple[int, int], float], asked: set[tuple[int, int]]
) -> tuple[int, int] | None:
    """The pair a budgeted tournament compares next: the uncompared pair (within one group) most likely to decide
    the winner, or None where every such pair is compared.

    Each candidate's win rate so far is ``(Σ p + 1) / (games + 2)`` and its upper bound that rate plus
    ``1 / sqrt(games + 1)`` (uncertain where it has played little); the pair whose lower upper bound is highest
    (both could still be the best) goes first, a higher group before a lower one (its winner is the live pick), and
    the lowest positions where they tie. Deterministic given the comparisons so far.
    """
    wins: dict[int, float] = dict.fromkeys(groups, 0.0)
    games: dict[int, int] = dict.fromkeys(groups, 0)
    for (a, b), p in seen.items():
        wins[a] += p
        wins[b] += 1.0 - p
        games[a] += 1
        games[b] += 1
    ucb = {i: (wins[i] + 1) / (games[i] + 2) + 1 / math.sqrt(games[i] + 1) for i in groups}
    best: tuple[tuple[float, float, int, int], tuple[int, int]] | None = None
    members = sorted(groups)
    for x, a in enumerate(members):
        for b in members[x + 1 :]:
            if groups[a] != groups[b] or (a, b) in asked:
                continue
            key = (groups[a], min(ucb[a], ucb[b]), -a, -b)
            if best is None or key > best[0]:
                best = (key, (a, b))
    return None if best is None else best[1]


def pair_tokens_at_k(tokens: Mapping[int, np.ndarray], sample: np.ndarray, ks: Sequence[int]) -> np.ndarray:
    """Per k, the tokens a tournament spends on a uniform k-subset of a task's samples, averaged over the tasks (the
    rows of ``sample``, the curve sample): each recorded pair of samples is in the subset with chance
    ``m (m − 1) / (n (n − 1))``, m = min(k, n). ``tokens``: per task row, the symmetric (n, n) tokens of each pair's
    comparison (0 where none)."""
    sample = np.atleast_2d(np.asarray(sample, bool))
    out = np.zeros(len(ks))
    for row, tok in tokens.items():
        at = np.flatnonzero(sample[row])
        n = at.size
        if n < 2:
            continue
        spent = float(np.triu(np.asarray(tok, np.float64)[np.ix_(at, at)], 1).sum())
        m = np.minimum(np.asarray(ks, np.float64), n)
        out += spent * m * (m - 1) / (n * (n - 1))
    return out / max(sample.shape[0], 1)
