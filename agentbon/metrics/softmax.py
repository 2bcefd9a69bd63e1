"""selected@k of a softmax sampler (``soft-bon``), exact over uniform k-subsets (docs/estimators.md).

In a k-subset S the winner is drawn with probability ``w_i / Σ_{j∈S} w_j`` (``w = exp(logit)``); a
member of weight 0 (logit ``-inf``) wins only when every member of S has weight 0, then uniformly.
Writing the ratio as an exponential race, ``w_i/(w_i + W) = ∫ w_i e^{-w_i t} e^{-W t} dt``, turns the
mean over subsets into one integral of a polynomial in ``x_j = e^{-w_j t}``:

    selected@k = ∫_0^∞ B_k(t) dt / C(n, k),  B_k = Σ_{|S|=k} (Σ_{i∈S} y_i w_i) Π_{j∈S} x_j,

plus the weight-0 term ``ȳ_0 · C(n_0, k)/C(n, k)``. ``B_k / C(n, k)`` comes from a recurrence of
convex combinations (no cancellation, no binomial formed), and the integral is a trapezoid sum in
``log t``: the integrand is analytic in a strip there and decays exponentially at both ends, so the
error falls like ``exp(-π²/h)`` (about 1e-14 at the step used) — deterministic, no Monte Carlo.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from agentbon.metrics.combinatorics import fail_ratio
from agentbon.metrics.sampling import Ks, _ks, gather_rows

STEP = 0.3
"""Trapezoid step in log t."""
LOW_TAIL = 37.0
"""The grid starts where ``t·n`` is about ``e^-37``: the part below is under 1e-16."""
HIGH_TAIL = 4.2
"""The grid ends where the smallest weight's race term ``u·e^-u`` has ``u = e^4.2 ≈ 67``."""


def _soft_rows(logits: np.ndarray, y: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """selected@k for rows that all hold the same number n of samples (every entry of ``logits`` counts)."""
    tasks, n = logits.shape
    out = np.zeros((tasks, ks.size))
    positive = np.isfinite(logits)
    # Weight-0 members win only in subsets made of them alone: uniform among those.
    zeros = (~positive).sum(axis=1)
    zero_mean = np.where(zeros > 0, (y * ~positive).sum(axis=1) / np.maximum(zeros, 1), 0.0)
    for j, k in enumerate(ks):
        out[:, j] = zero_mean * fail_ratio(np.full(tasks, n), n - zeros, int(min(k, n)))
    rows = np.flatnonzero(positive.any(axis=1))
    if rows.size == 0:
        return out
    # Scale so the largest weight is 1 (the ratio is scale-free); log-weights stay finite for any spread.
    top = np.max(np.where(positive[rows], logits[rows], -np.inf), axis=1, keepdims=True)
    log_w = np.where(positive[rows], logits[rows] - top, -np.inf)
    spread = float(-np.min(np.where(positive[rows], log_w, 0.0)))
    grid = np.arange(-LOW_TAIL - np.log(n), spread + HIGH_TAIL + STEP, STEP)  # log t
    z = log_w[:, :, None] + grid[None, None, :]  # log(w_j t): (rows, n, nodes)
    with np.errstate(over="ignore"):
        u = np.exp(z)
    x = np.exp(-u)  # e^{-w_j t}
    ax = y[rows][:, :, None] * np.exp(z - u)  # y_j w_j t e^{-w_j t}: the t of dt = t d(log t) folded in
    # A[m] = e_m(x_1..x_r)/C(r, m); B[m] = Σ_{|S|=m} (Σ_{i∈S} a_i) Π_{j∈S} x_j / C(r, m), built one sample at a time.
    m = np.arange(n + 1, dtype=np.float64)
    shape = (rows.size, grid.size, n + 1)
    a_poly, b_poly = np.zeros(shape), np.zeros(shape)
    a_poly[..., 0] = 1.0
    for r in range(1, n + 1):  # only m <= r changes at step r (B[0] stays 0, A[0] stays 1)
        keep, take = (r - m[1 : r + 1]) / r, m[1 : r + 1] / r
        xr, axr = x[:, r - 1, :, None], ax[:, r - 1, :, None]
        b_poly[..., 1 : r + 1] = keep * b_poly[..., 1 : r + 1] + take * (xr * b_poly[..., :r] + axr * a_poly[..., :r])
        a_poly[..., 1 : r + 1] = keep * a_poly[..., 1 : r + 1] + take * xr * a_poly[..., :r]
    integral = b_poly.sum(axis=1) * STEP  # (rows, n + 1)
    out[rows] += integral[:, np.minimum(ks, n)]
    return out


def softmax_inputs(
    logits: np.ndarray, correct: np.ndarray, valid: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Logits, correctness and the valid mask as 2-D arrays (correctness 0 where a sample does not count), checked."""
    s = np.asarray(logits, dtype=np.float64)
    s2 = np.atleast_2d(s)
    y2 = np.atleast_2d(np.asarray(correct, dtype=np.float64))
    if y2.shape != s2.shape or s2.ndim != 2:
        raise ValueError(f"logits {s.shape} and correct {np.shape(correct)} must have the same 1-D or 2-D shape")
    v2 = ~np.isnan(s2) if valid is None else np.atleast_2d(np.asarray(valid, dtype=bool)) & ~np.isnan(s2)
    if v2.shape != s2.shape:
        raise ValueError(f"valid {v2.shape} must match logits {s2.shape}")
    if (np.isposinf(s2) & v2).any():
        raise ValueError("logits must be finite or -inf")
    return s2, np.where(v2, y2, 0.0), v2


def packed_groups(
    s2: np.ndarray, y2: np.ndarray, v2: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per number n > 0 of valid samples: the rows with n, and their logits and correctness, valid samples only."""
    counts = v2.sum(axis=1)
    for n in (int(c) for c in np.unique(counts) if c > 0):
        rows = np.flatnonzero(counts == n)
        if rows.size == s2.shape[0] and n == s2.shape[1]:  # every sample of every row counts: nothing to pack
            yield rows, s2, y2
            continue
        order = np.argsort(~v2[rows], axis=1, kind="stable")[:, :n]
        yield rows, gather_rows(s2[rows], order), gather_rows(y2[rows], order)


def softmax_selected_at_k(
    logits: np.ndarray, correct: np.ndarray, k: Ks, valid: np.ndarray | None = None, chunk_cells: int = 2_000_000
) -> np.ndarray | float:
    """Expected correctness of a softmax draw from a uniform k-subset of the valid samples, exactly.

    ``logits`` and ``correct`` have shape ``(n,)`` or ``(tasks, n)``; ``valid`` marks the samples
    that count (default: logits that are not NaN); a logit of ``-inf`` is weight 0. ``k > n`` is
    scored as ``k = n``, as :func:`~agentbon.metrics.selected_at_k` does; a row with no valid
    sample scores 0. At every k the result lies between pass@1-like uniform choice (equal logits)
    and the argmax selector's selected@k (logits far apart).
    """
    ks, scalar_k = _ks(k)
    s2, y2, v2 = softmax_inputs(logits, correct, valid)
    out = np.zeros((s2.shape[0], ks.size))
    for rows, packed_s, packed_y in packed_groups(s2, y2, v2):
        n = packed_s.shape[1]
        step = max(1, chunk_cells // ((n + 1) * 256))  # bounds the (rows, nodes, n + 1) work arrays
        for start in range(0, rows.size, step):
            part = slice(start, start + step)
            out[rows[part]] = _soft_rows(packed_s[part], packed_y[part], ks)
    if scalar_k:
        out = out[:, 0]
    if np.ndim(logits) == 1:
        return float(out[0]) if scalar_k else out[0]
    return out
