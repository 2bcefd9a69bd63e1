"""majority's selected@k estimated without bias where the exact sum is too costly (docs/estimators.md, "majority").

One uniformly random order per task: its first k samples are a uniform k-subset for every k at once. Walking the
order, the vote is kept as it goes (the largest count so far, the clusters tied at it and the sum of their mean
correctness ȳ_c), so each prefix's value is the vote's expected correctness on that subset, its tie and member
draws averaged exactly. A control variate takes out most of the subset's noise: a uniform choice among the same
subset's candidates, whose mean over k-subsets is known exactly (ȳ of the candidates times the chance that the
subset holds one); the two agree wherever the subset's clusters all have one member. Its coefficient per k is set
from a pilot on separate draws, so it is independent of the draws it corrects and the estimate stays unbiased.
"""

from __future__ import annotations

import numpy as np

from agentbon.metrics.combinatorics import fail_ratio
from agentbon.metrics.majority import majority_inputs
from agentbon.metrics.sampling import Ks, _ks, flat_index, gather_rows
from agentbon.metrics.softmax import packed_groups
from agentbon.metrics.softmax_estimate import PILOT_DRAWS, PILOT_ROWS, SampledEstimate


def _draw(
    ids: np.ndarray, cand: np.ndarray, ybar: np.ndarray, ks: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """For rows that all hold n samples: the vote's and the uniform choice's value on one random order's prefixes,
    each (rows, ks). ``ids`` are flat cluster ids (unique across rows), ``ybar`` each sample's cluster mean."""
    rows, n = ids.shape
    order = rng.permuted(np.broadcast_to(np.arange(n), ids.shape), axis=1)
    flat = flat_index(order, n)
    seq_id, seq_cand, seq_y = (gather_rows(a, order, flat).reshape(rows, n) for a in (ids, cand, ybar))
    counts = np.zeros(ids.size, dtype=np.int64)
    top, tied = np.zeros(rows, np.int64), np.zeros(rows, np.int64)
    tied_y, cand_y, cand_n = np.zeros(rows), np.zeros(rows), np.zeros(rows)
    kk = np.minimum(ks, n)
    vote, uniform = np.zeros((rows, ks.size)), np.zeros((rows, ks.size))
    for p in range(n):
        cid, ok, y = seq_id[:, p], seq_cand[:, p], seq_y[:, p]
        counts[cid] += ok
        q = counts[cid]
        up, join = ok & (q > top), ok & (q == top)  # a new largest count; or a cluster joining the tie at it
        top = np.where(up, q, top)
        tied = np.where(up, 1, tied + join)
        tied_y = np.where(up, y, tied_y + join * y)
        cand_y += ok * y
        cand_n += ok
        cols = np.flatnonzero(kk == p + 1)
        if cols.size:
            vote[:, cols] = (tied_y / np.maximum(tied, 1))[:, None]
            uniform[:, cols] = (cand_y / np.maximum(cand_n, 1))[:, None]
    return vote, uniform


def _prepare(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Flat cluster ids, the candidate mask, each sample's cluster mean and the candidates' mean, for packed rows."""
    rows, n = s.shape
    order = np.argsort(s, axis=1, kind="stable")
    ranked = gather_rows(s, order).reshape(rows, n)
    new = np.ones((rows, n), bool)
    new[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    ids = np.empty(rows * n, dtype=np.int64)
    ids[flat_index(order, n).ravel()] = (np.cumsum(new, axis=1) - 1 + (np.arange(rows) * n)[:, None]).ravel()
    ids = ids.reshape(rows, n)
    cand = np.isfinite(s)
    sums = np.bincount(ids.ravel(), weights=(y * cand).ravel(), minlength=rows * n)
    sizes = np.bincount(ids.ravel(), minlength=rows * n)
    ybar = (sums / np.maximum(sizes, 1))[ids] * cand
    mean = (y * cand).sum(axis=1) / np.maximum(cand.sum(axis=1), 1)
    return ids, cand, ybar, mean


def _draws(
    s2: np.ndarray, y2: np.ndarray, v2: np.ndarray, ks: np.ndarray, rng: np.random.Generator, draws: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``draws`` draws of the vote and of the uniform choice for every row, each (draws, rows, ks), and the uniform
    choice's exact mean (rows, ks); zeros for a row with no sample."""
    vote, uniform = np.zeros((2, draws, s2.shape[0], ks.size))
    exact = np.zeros((s2.shape[0], ks.size))
    for rows, s, y in packed_groups(s2, y2, v2):
        ids, cand, ybar, mean = _prepare(s, y)
        n, c = np.full(rows.size, s.shape[1]), cand.sum(axis=1)
        exact[rows] = np.stack([mean * (1.0 - fail_ratio(n, c, int(min(k, s.shape[1])))) for k in ks], axis=-1)
        for d in range(draws):
            vote[d, rows], uniform[d, rows] = _draw(ids, cand, ybar, ks, rng)
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
    vote, uniform, exact = _draws(s2, y2, v2, ks, main_rng, draws)
    corrected = vote - beta * (uniform - exact)  # the control variate has mean 0 over k-subsets
    values = corrected.mean(axis=0)
    if draws > 1:
        per_row = corrected[:, sampled].var(axis=0, ddof=1).mean(axis=0)
    else:
        per_row = (pv - beta * pu).var(axis=0, ddof=1).mean(axis=0)  # the pilot's, for the same coefficient
    se = np.sqrt(per_row / draws / sampled.size)
    return SampledEstimate(values, se, draws)
