"""majority's selected@k estimated without bias where the exact sum is too costly (docs/estimators.md, "majority").

One uniformly random order per task: its first k samples are a uniform k-subset for every k at once. Each
prefix's clusters are counted (one count per k, each from the previous), and its value is the vote's expected
correctness on that subset, its tie and member draws averaged exactly: the mean of ȳ_c over its largest clusters. A control variate takes out most of the subset's noise: a uniform choice among the same
subset's candidates, whose mean over k-subsets is known exactly (ȳ of the candidates times the chance that the
subset holds one); the two agree wherever the subset's clusters all have one member. Its coefficient per k is set
from a pilot on separate draws, so it is independent of the draws it corrects and the estimate stays unbiased; at
k <= 2 the vote is the uniform choice (one cluster, or a tie) and the coefficient is 1: exact, as at k = n.
"""

from __future__ import annotations

import numpy as np

from agentbon.metrics.combinatorics import fail_ratio
from agentbon.metrics.majority import majority_inputs
from agentbon.metrics.sampling import Ks, _ks, flat_index, gather_rows
from agentbon.metrics.softmax import packed_groups
from agentbon.metrics.softmax_estimate import PILOT_DRAWS, PILOT_ROWS, SampledEstimate


def _draw(
    ids: np.ndarray, cand: np.ndarray, ybar: np.ndarray, width: int, ks: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """For rows that all hold n samples: the vote's and the uniform choice's value on one random order's prefixes,
    each (rows, ks). ``ids`` are flat cluster ids (row · width + the row's cluster), ``ybar`` each cluster's mean
    correctness by flat id."""
    rows, n = ids.shape
    order = rng.permuted(np.broadcast_to(np.arange(n), ids.shape), axis=1)
    flat = flat_index(order, n)
    seq_id, seq_cand = (gather_rows(a, order, flat).reshape(rows, n) for a in (ids, cand))
    # The uniform choice: the mean of ȳ_c over the prefix's candidates, from running sums.
    picked = np.cumsum(seq_cand, axis=1)
    held = np.cumsum(ybar[seq_id] * seq_cand, axis=1)
    counts = np.zeros(rows * width)
    means = ybar.reshape(rows, width)
    vote, uniform = np.zeros((rows, ks.size)), np.zeros((rows, ks.size))
    done = 0
    for i in np.argsort(ks, kind="stable"):
        k = int(min(ks[i], n))
        uniform[:, i] = held[:, k - 1] / np.maximum(picked[:, k - 1], 1)
        if k > done:  # the counts of each cluster in the first k, from those in the first ``done``
            counts += np.bincount(seq_id[:, done:k].ravel(), weights=seq_cand[:, done:k].ravel(),
                                  minlength=rows * width)  # fmt: skip
            done = k
        table = counts.reshape(rows, width)
        tied = table == table.max(axis=1, keepdims=True)  # the largest clusters of the subset: a uniform one wins
        ties = np.count_nonzero(tied, axis=1)
        vote[:, i] = np.where(picked[:, k - 1] > 0, np.einsum("ij,ij->i", tied, means) / ties, 0.0)
    return vote, uniform


def _prepare(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Flat cluster ids (row · width + cluster), the candidate mask, each cluster's mean by flat id, the candidates'
    mean, and the width, for packed rows. Labels that are small whole numbers (the report's) are their own ids."""
    rows, n = s.shape
    cand = np.isfinite(s)
    local = np.where(cand, s, 0.0)
    if not (local == np.round(local)).all() or local.min(initial=0) < 0 or local.max(initial=0) >= 4 * n:
        local = np.unique(local, return_inverse=True)[1].reshape(rows, n).astype(np.float64)  # dense ids
    width = int(local.max(initial=0)) + 1
    ids = local.astype(np.int64) + (np.arange(rows, dtype=np.int64) * width)[:, None]
    sums = np.bincount(ids.ravel(), weights=(y * cand).ravel(), minlength=rows * width)
    sizes = np.bincount(ids.ravel(), weights=cand.ravel(), minlength=rows * width)
    ybar = sums / np.maximum(sizes, 1)
    mean = (y * cand).sum(axis=1) / np.maximum(cand.sum(axis=1), 1)
    return ids, cand, ybar, mean, width


def _draws(
    s2: np.ndarray, y2: np.ndarray, v2: np.ndarray, ks: np.ndarray, rng: np.random.Generator, draws: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``draws`` draws of the vote and of the uniform choice for every row, each (draws, rows, ks), and the uniform
    choice's exact mean (rows, ks); zeros for a row with no sample."""
    vote, uniform = np.zeros((2, draws, s2.shape[0], ks.size))
    exact = np.zeros((s2.shape[0], ks.size))
    for rows, s, y in packed_groups(s2, y2, v2):
        ids, cand, ybar, mean, width = _prepare(s, y)
        n, c = np.full(rows.size, s.shape[1]), cand.sum(axis=1)
        exact[rows] = np.stack([mean * (1.0 - fail_ratio(n, c, int(min(k, s.shape[1])))) for k in ks], axis=-1)
        for d in range(draws):
            vote[d, rows], uniform[d, rows] = _draw(ids, cand, ybar, width, ks, rng)
    return vote, uniform, exact


def majority_selected_at_k_estimate(
    labels: np.ndarray, correct: np.ndarray, k: Ks, valid: np.ndarray | None = None, draws: int = 1, seed: int = 0
) -> SampledEstimate:
    """Unbiased per-task estimates of :func:`~agentbon.metrics.majority.majority_selected_at_k` (same arguments,
    2-D), with the standard error of their mean over tasks. Deterministic for a given ``seed``."""
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    ks, _ = _ks(k)
    s2, y2, v2 = majority_inputs(labels, correct, valid)
    pilot_rng, main_rng = (np.random.default_rng(child) for child in np.random.SeedSequence(seed).spawn(2))
    sampled = np.flatnonzero(v2.any(axis=1))
    if sampled.size == 0:
        return SampledEstimate(np.zeros((s2.shape[0], ks.size)), np.zeros(ks.size), draws)
    pilot = np.sort(pilot_rng.choice(sampled, size=min(PILOT_ROWS, sampled.size), replace=False))
    pv, pu, _ = _draws(s2[pilot], y2[pilot], v2[pilot], ks, pilot_rng, PILOT_DRAWS)
    cov = ((pv - pv.mean(axis=0)) * (pu - pu.mean(axis=0))).sum(axis=0).sum(axis=0)
    var = ((pu - pu.mean(axis=0)) ** 2).sum(axis=0).sum(axis=0)
    beta = np.where(var > 0, cov / np.where(var > 0, var, 1.0), 0.0)  # per k, pooled over the pilot's tasks
    beta[ks <= 2] = 1.0  # of one or two members the vote is the uniform choice (one cluster, or a tie): exact
    vote, uniform, exact = _draws(s2, y2, v2, ks, main_rng, draws)
    corrected = vote - beta * (uniform - exact)  # the control variate has mean 0 over k-subsets
    values = corrected.mean(axis=0)
    if draws > 1:
        per_row = corrected[:, sampled].var(axis=0, ddof=1).mean(axis=0)
    else:
        per_row = (pv - beta * pu).var(axis=0, ddof=1).mean(axis=0)  # the pilot's, for the same coefficient
    se = np.sqrt(per_row / draws / sampled.size)
    return SampledEstimate(values, se, draws)
