"""selected@k of ``majority``: a vote inside each k-subset, exactly (docs/estimators.md, "majority").

In a k-subset S the winner comes from the largest cluster of identical patches among S's candidates, a tie between
clusters broken uniformly (and the member uniformly within the cluster); a subset without a candidate chooses
nothing. Given S's cluster counts the chosen member is a uniform member of its cluster, so its expected correctness
is the cluster's mean ȳ_c over the task's sample, and selected@k = Σ_c ȳ_c · P(c wins a uniform k-subset).

Cluster c wins with j members when every other cluster has fewer than j, or exactly j and c wins the uniform tie:
1/(t + 1) for t other clusters tied is ∫_0^1 u^t du. With the counts' generating function,

    P(c wins with j) = C(m_c, j) / C(n, k) · ∫_0^1 [x^{k-j}] (1+x)^{R_j} Π_{d≠c, m_d≥j} (a_{d,j}(x) + u C(m_d, j) x^j) du,

a_{d,j} = Σ_{i<j} C(m_d, i) x^i and R_j the samples outside clusters of at least j members (non-candidates
included). The product is a polynomial in x and u with non-negative coefficients (no cancellation); clusters of
one size share their chance, so it is built once per layer j and size. Rows whose clusters all have one member are a
uniform choice among the subset's candidates: one closed form for all of them, no loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

import numpy as np

from agentbon.metrics.combinatorics import fail_ratio
from agentbon.metrics.sampling import Ks, _ks

MAX_EXACT_N = 1000
"""Largest task the exact sum takes: its binomials are floats, C(1000, 500) ≈ 3e299."""


@lru_cache(maxsize=4)
def binomials(m: int) -> np.ndarray:
    """``C(a, b)`` as floats for 0 <= a, b <= m, by Pascal's rule (sums of positives: a few ulps relative)."""
    table = np.zeros((m + 1, m + 1))
    table[:, 0] = 1.0
    for a in range(1, m + 1):
        table[a, 1:] = table[a - 1, 1:] + table[a - 1, :-1]
    table.setflags(write=False)
    return table


def majority_inputs(labels: np.ndarray, correct: np.ndarray, valid: np.ndarray | None) -> tuple[np.ndarray, ...]:
    """Labels, correctness and the sample mask as 2-D arrays, checked: a label is a cluster (any finite value), ``-inf``
    a sample that is no candidate, NaN (or ``valid`` False) no sample."""
    s = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    y = np.atleast_2d(np.asarray(correct, dtype=np.float64))
    if y.shape != s.shape or s.ndim != 2:
        raise ValueError(f"labels {np.shape(labels)} and correct {np.shape(correct)} must have the same 1-D or 2-D shape")
    v = ~np.isnan(s) if valid is None else np.atleast_2d(np.asarray(valid, dtype=bool)) & ~np.isnan(s)
    if v.shape != s.shape:
        raise ValueError(f"valid {v.shape} must match labels {s.shape}")
    if (np.isposinf(s) & v).any():
        raise ValueError("cluster labels must be finite, or -inf for a sample that is no candidate")
    return s, np.where(v, y, 0.0), v


def clustered_rows(s: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rows where two candidates share a cluster (the others are a uniform choice)."""
    key = np.sort(np.where(v & np.isfinite(s), s, np.nan), axis=1)  # NaN sorts last and equals nothing
    return np.flatnonzero((key[:, 1:] == key[:, :-1]).any(axis=1))


def majority_selected_at_k(
    labels: np.ndarray, correct: np.ndarray, k: Ks, valid: np.ndarray | None = None
) -> np.ndarray | float:
    """Expected correctness of majority's choice in a uniform k-subset, exactly (the module's formula).

    ``labels`` and ``correct`` have shape ``(n,)`` or ``(tasks, n)``; see :func:`majority_inputs`. ``k > n`` is
    scored as ``k = n`` and a row without a sample scores 0, as :func:`~agentbon.metrics.selected_at_k` does.
    """
    ks, scalar_k = _ks(k)
    s, y, v = majority_inputs(labels, correct, valid)
    cand = v & np.isfinite(s)
    n, c = v.sum(axis=1), cand.sum(axis=1)
    if (n > MAX_EXACT_N).any():
        raise ValueError(f"the exact majority sum takes tasks of at most {MAX_EXACT_N} samples, got {int(n.max())}")
    # A uniform choice among the subset's candidates: mean correctness of the candidates, times P(one is drawn).
    mean = (y * cand).sum(axis=1) / np.maximum(c, 1)
    out = np.stack([mean * (1.0 - fail_ratio(n, c, int(kk))) for kk in ks], axis=-1)
    out[n == 0] = 0.0
    for row in clustered_rows(s, v):
        ids, inverse = np.unique(s[row][cand[row]], return_inverse=True)
        sizes = np.bincount(inverse, minlength=ids.size)
        means = np.bincount(inverse, weights=y[row][cand[row]], minlength=ids.size) / sizes
        values, by_size = np.unique(sizes, return_inverse=True)
        chances = _chances(tuple(values.tolist()), tuple(np.bincount(by_size).tolist()), int(n[row] - c[row]),
                           tuple(np.minimum(ks, n[row]).tolist()))  # fmt: skip
        out[row] = np.bincount(by_size, weights=means) @ chances  # Σ over sizes of Σ ȳ_c · its chance
    if scalar_k:
        out = out[:, 0]
    if np.ndim(labels) == 1:
        return float(out[0]) if scalar_k else out[0]
    return out


def exact_majority_work(labels: np.ndarray, valid: np.ndarray | None = None) -> int:
    """The exact sum's cost, roughly in microseconds here (within a factor of 3 on the shapes timed in
    docs/estimators.md): per task with a cluster of two or more, 500 + 3 · (1 + b) · Σ m(m + 3)/2 over its b
    clusters of m >= 2 members (the layers' products); 0 for the others (one closed form for all of them)."""
    s, _, v = majority_inputs(labels, np.zeros(np.shape(labels)), valid)
    key = np.sort(np.where(v & np.isfinite(s), s, np.nan), axis=1)
    same = np.zeros(key.shape, bool)
    same[:, 1:] = key[:, 1:] == key[:, :-1]  # a member after the first of its cluster
    rank = np.cumsum(~same, axis=1)  # the cluster each sorted sample belongs to, numbered along the row
    sizes = np.zeros(key.shape)
    rows = np.repeat(np.arange(key.shape[0]), key.shape[1])
    np.add.at(sizes, (rows, rank.ravel() - 1), 1.0)
    big = sizes >= 2
    b = big.sum(axis=1)
    area = (np.where(big, sizes * (sizes + 3) / 2, 0.0)).sum(axis=1)
    return int(np.where(b > 0, 500 + 3 * (1 + b) * area, 0).sum())


@lru_cache(maxsize=65536)
def _chances(values: tuple[int, ...], groups: tuple[int, ...], r: int, kk: tuple[int, ...]) -> np.ndarray:
    """(sizes, ks): the chance that one given cluster of each size wins a uniform k-subset, for a task with
    ``groups[i]`` clusters of ``values[i]`` members and ``r`` samples that are no candidate (``kk`` at most n). It
    depends on nothing else, so tasks with the same clusters share it."""
    sizes, counts, ks = np.asarray(values), np.asarray(groups), np.asarray(kk)
    n = r + int((sizes * counts).sum())
    table = binomials(1 << max(6, n.bit_length()))
    out = np.zeros((sizes.size, ks.size))
    for j in range(1, int(sizes[-1]) + 1):
        top = sizes >= j
        rest = r + int((sizes[~top] * counts[~top]).sum())  # samples whose cluster cannot reach j: free
        degree = min(int(ks.max()) - j, j * (int(counts[top].sum()) - 1))  # x-degree of the others: j each
        if degree < 0:
            break
        # [x^(k-j)] of (1+x)^rest · q for every k: one matrix of binomials C(rest, k - j - i).
        free = (ks - j)[:, None] - np.arange(degree + 1)[None, :]
        pick = np.where((free >= 0) & (free <= rest), table[rest, np.clip(free, 0, rest)], 0.0)
        for size, q in _layer(sizes[top], counts[top], j, degree, table):
            out[np.flatnonzero(sizes == size)[0]] += table[size, j] * (pick @ q)
    out /= table[n, ks]
    out.setflags(write=False)
    return out


def _layer(
    values: np.ndarray, groups: np.ndarray, j: int, degree: int, table: np.ndarray
) -> Iterator[tuple[int, np.ndarray]]:
    """For each cluster size s of the layer: ∫_0^1 Π (a_{d,j} + u C(m_d, j) x^j) du over every cluster of at least j
    members but one of size s, as its coefficients in x up to ``degree``."""
    ties = min(int(groups.sum()) - 1, degree // j)  # other clusters tied at j: u's degree
    if j == 1:  # a_{d,1} = 1: the product is a polynomial in ux alone, its u^t term is its x^t term
        base = np.zeros(degree + 1)
        base[0] = 1.0
        for size, g in zip(values, groups, strict=True):
            base = _times_linear(base, int(size), int(g) - 1, table)
        for size in values:
            e = base
            for other in values[values != size]:
                e = _times_linear(e, int(other), 1, table)
            yield int(size), e / np.arange(1, degree + 2)
        return
    base = np.zeros((degree + 1, ties + 1))
    base[0, 0] = 1.0
    for size, g in zip(values, groups, strict=True):
        for _ in range(int(g) - 1):
            base = _times(base, int(size), j, table)
    integral = 1.0 / np.arange(1, ties + 2)
    for size in values:
        p = base
        for other in values[values != size]:
            p = _times(p, int(other), j, table)
        yield int(size), p @ integral


def _times_linear(e: np.ndarray, size: int, power: int, table: np.ndarray) -> np.ndarray:
    """``e · (1 + size·z)^power``, truncated to e's length."""
    if power <= 0:
        return e
    t = np.arange(min(power, e.size - 1) + 1)
    factor = table[power, t] * float(size) ** t
    return np.convolve(e, factor)[: e.size]


def _times(p: np.ndarray, size: int, j: int, table: np.ndarray) -> np.ndarray:
    """``p · (Σ_{i<j} C(size, i) x^i + u C(size, j) x^j)``, truncated to p's shape (x on axis 0, u on axis 1)."""
    rows = p.shape[0]
    out = np.zeros_like(p)
    for i in range(min(j, rows)):
        out[i:] += table[size, i] * p[: rows - i]
    if j < rows and p.shape[1] > 1:
        out[j:, 1:] += table[size, j] * p[: rows - j, :-1]
    return out
