"""soft-bon's selected@k estimated without bias where the exact sum is too costly (docs/estimators.md, "soft-bon at scale").

The exact value (:func:`~agentbon.metrics.softmax_selected_at_k`) costs O(n²) per task at each of ~150
quadrature nodes: about 50 ms a task at n = 256, minutes at 10,000 tasks. Here each task's value is an
unbiased Monte Carlo estimate that integrates one of the two random parts exactly and draws the other:

- **ranking draw** (G): one Gumbel draw per sample turns the softmax into a fixed ranking (Gumbel-max: the
  best-ranked member of any subset is a softmax draw from it), and the mean over every k-subset of that
  ranking's choice is the argmax selector's closed form. Exact at k = 1, most precise at small k.
- **subset draw** (P): one uniformly random order per task; its first k samples are a uniform k-subset
  for every k at once, and the softmax over a subset is summed exactly (``Σ y w / Σ w``). A control
  variate with mean exactly zero, ``(Y - ρW) / E[W]`` (ρ the task's whole-sample ratio), takes out the
  first-order noise. Exact at k = n, most precise at large k.

Each k's estimate is a fixed blend ``α G + (1 - α) P``, α set by inverse variance from a pilot on separate
draws, so α is independent of the estimates it blends and the blend stays unbiased. Tasks' estimates are
independent, so the report's bootstrap over tasks already carries the Monte Carlo noise; the standard error
of the mean over tasks is returned beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agentbon.metrics.combinatorics import position_weights
from agentbon.metrics.sampling import Ks, _ks, flat_index, gather_rows
from agentbon.metrics.softmax import packed_groups, softmax_inputs

PILOT_ROWS = 256
"""Tasks (at most) the pilot draws on to set each k's blend."""
PILOT_DRAWS = 4
CHUNK_SAMPLES = 262144
"""Samples drawn on at once."""
TINY = np.finfo(np.float64).tiny
"""An exponential draw of exactly 0 would make an infinite Gumbel draw."""


@dataclass(frozen=True)
class SampledEstimate:
    """A selector's selected@k estimated without bias (soft-bon here, majority in metrics/majority_estimate.py)."""

    values: np.ndarray
    """Per task and k, an unbiased estimate of selected@k (0 for a task with no sample)."""
    se: np.ndarray
    """Per k, the Monte Carlo standard error of the mean of ``values`` over the tasks with a sample."""
    draws: int
    """Draws of each kind per task."""


def _draw(s: np.ndarray, y: np.ndarray, ks: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One draw of each estimator for rows that all hold n valid samples: (G, P), each (rows, ks)."""
    n = s.shape[1]
    kk = np.minimum(ks, n)
    finite = np.isfinite(s)
    # G: Gumbel-max (-log of a unit exponential is a Gumbel draw) ranks the finite logits; weight-0 samples
    # (-inf) go below them in a uniform order, so a subset of weight-0 samples alone picks uniformly among
    # them, as the softmax's limit does.
    key = s - np.log(np.maximum(rng.standard_exponential(size=s.shape), TINY))
    if not finite.all():
        floor = np.min(np.where(finite, key, np.inf), axis=1, keepdims=True)
        floor = np.where(np.isfinite(floor), floor, 0.0) - 1.0
        key = np.where(finite, key, floor - rng.random(size=s.shape))
    ranked = gather_rows(y, np.argsort(-key, axis=1))
    g = ranked @ position_weights(n, tuple(int(k) for k in ks), n)
    # P: prefixes of a uniform order; W = 0 only when every member has weight 0 (a uniform choice then).
    top = np.max(np.where(finite, s, -np.inf), axis=1, keepdims=True)
    w = np.where(finite, np.exp(s - np.where(np.isfinite(top), top, 0.0)), 0.0)
    a = y * w
    order = rng.permuted(np.broadcast_to(np.arange(n), s.shape), axis=1)
    prefix = (np.arange(n)[:, None] < kk[None, :]).astype(np.float64)  # sums over the first k of the order
    flat = flat_index(order, n)
    big_w, big_y, count_y = ((gather_rows(v, order, flat) @ prefix) for v in (w, a, y))
    total_w = w.sum(axis=1, keepdims=True)
    weighted = total_w > 0
    ratio = a.sum(axis=1, keepdims=True) / np.where(weighted, total_w, 1.0)
    mean_w = np.where(weighted, total_w, 1.0) / n * kk  # E[W] over k-subsets
    z = np.where(big_w > 0, big_y / np.where(big_w > 0, big_w, 1.0), count_y / kk)
    p = z - np.where(weighted, (big_y - ratio * big_w) / mean_w, 0.0)  # the control variate has mean 0
    return g, p


def _draws(
    s2: np.ndarray, y2: np.ndarray, v2: np.ndarray, ks: np.ndarray, rng: np.random.Generator, draws: int
) -> tuple[np.ndarray, np.ndarray]:
    """``draws`` draws of G and P for every row: each (draws, rows, ks); zeros for a row with no sample."""
    g, p = np.zeros((2, draws, s2.shape[0], ks.size))
    for rows, s, y in packed_groups(s2, y2, v2):
        step = max(1, CHUNK_SAMPLES // s.shape[1])  # small work arrays, reused: cheaper than touching fresh memory
        for start in range(0, rows.size, step):
            part = slice(start, start + step)
            for d in range(draws):
                g[d, rows[part]], p[d, rows[part]] = _draw(s[part], y[part], ks, rng)
    return g, p


def _variances(g: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row and k, each estimator's variance of one draw (draws on axis 0, at least two)."""
    return g.var(axis=0, ddof=1), p.var(axis=0, ddof=1)


def softmax_selected_at_k_estimate(
    logits: np.ndarray, correct: np.ndarray, k: Ks, valid: np.ndarray | None = None, draws: int = 1, seed: int = 0
) -> SampledEstimate:
    """Unbiased per-task estimates of :func:`~agentbon.metrics.softmax_selected_at_k` (same arguments, 2-D).

    ``draws`` draws of each kind per task (at least 1); the blend per k is set by a pilot on at most
    ``PILOT_ROWS`` tasks with draws of its own. Deterministic for a given ``seed``.
    """
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    ks, _ = _ks(k)
    s2, y2, v2 = softmax_inputs(logits, correct, valid)
    pilot_rng, main_rng = (np.random.default_rng(child) for child in np.random.SeedSequence(seed).spawn(2))
    sampled = np.flatnonzero(v2.any(axis=1))
    if sampled.size == 0:
        return SampledEstimate(np.zeros((s2.shape[0], ks.size)), np.zeros(ks.size), draws)
    pilot = np.sort(pilot_rng.choice(sampled, size=min(PILOT_ROWS, sampled.size), replace=False))
    var_g, var_p = (v.mean(axis=0) for v in _variances(*_draws(s2[pilot], y2[pilot], v2[pilot], ks, pilot_rng, PILOT_DRAWS)))
    total = var_g + var_p
    alpha = np.where(total > 0, var_p / np.where(total > 0, total, 1.0), 0.5)  # weight of G
    g, p = _draws(s2, y2, v2, ks, main_rng, draws)
    blend = alpha * g + (1 - alpha) * p  # (draws, rows, ks)
    values = blend.mean(axis=0)
    if draws > 1:
        per_row = blend[:, sampled].var(axis=0, ddof=1).mean(axis=0)  # one draw's variance, averaged over tasks
    else:
        per_row = alpha**2 * var_g + (1 - alpha) ** 2 * var_p  # the pilot's, for the same blend
    se = np.sqrt(per_row / draws / sampled.size)
    return SampledEstimate(values, se, draws)
