"""Exact binomial ratios in log space, cached per sample count (docs/estimators.md).

Everything here works with ratios such as ``C(a, k) / C(n, k)``, never with the binomials
themselves: ``C(256, 128)`` is about 5.8e75 and products of such numbers overflow float64 long
before n = 1024, while their logarithms stay below a few thousand and lose only ~1e-13 relative.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=8)
def log_factorials(m: int) -> np.ndarray:
    """``log(i!)`` for i = 0..m, each from ``math.lgamma`` (no accumulated rounding)."""
    return np.array([math.lgamma(i + 1.0) for i in range(m + 1)])


def _table_size(m: int) -> int:
    # Round up to a power of two so the cache is reused across nearby sizes.
    return 1 << max(8, int(m).bit_length())


def log_comb(a: np.ndarray | int, k: np.ndarray | int) -> np.ndarray:
    """``log C(a, k)`` elementwise; ``-inf`` where ``k < 0`` or ``k > a`` (an empty choice)."""
    a_arr, k_arr = np.broadcast_arrays(np.asarray(a, dtype=np.int64), np.asarray(k, dtype=np.int64))
    lf = log_factorials(_table_size(int(a_arr.max(initial=0))))
    ok = (k_arr >= 0) & (k_arr <= a_arr)
    a_c, k_c = np.where(ok, a_arr, 0), np.where(ok, k_arr, 0)
    out = lf[a_c] - lf[k_c] - lf[a_c - k_c]
    return np.where(ok, out, -np.inf)


@lru_cache(maxsize=4096)
def position_weights(n: int, ks: tuple[int, ...], width: int) -> np.ndarray:
    """Probability that rank j (0 = best) is the best member of a uniform k-subset of n.

    ``P[j, i] = C(n-1-j, k_i-1) / C(n, k_i)`` for j < n and 0 for n <= j < width; each column sums
    to one. Summed over a tie group this is ``[C(n-m, k) - C(n-m-t, k)] / C(n, k)`` (hockey stick),
    the group weight of the selected@k formula. ``k > n`` is clamped to n (all samples drawn).
    """
    # P[0] = k/n and P[j+1]/P[j] = (n-j-k)/(n-j-1): a running product of ratios <= 1, exact for
    # k = 1 (all 1/n) and accurate to ~n ulps, with no binomial ever formed.
    k = np.minimum(np.asarray(ks, dtype=np.float64), n)[None, :]
    j = np.arange(n - 1, dtype=np.float64)[:, None]
    ratios = np.maximum(n - j - k, 0.0) / (n - j - 1)
    weights = np.vstack([k / n, k / n * np.cumprod(ratios, axis=0)])
    out = np.zeros((width, len(ks)))
    out[:n] = weights
    out.setflags(write=False)
    return out


@lru_cache(maxsize=256)
def _log_product_table(k: int, m: int) -> np.ndarray:
    """``S[i] = sum_{j=k+1..i} log1p(-k/j)`` (0 for i <= k): the log of Chen et al.'s product, cumulated."""
    terms = np.zeros(m + 1)
    j = np.arange(k + 1, m + 1, dtype=np.float64)
    terms[k + 1 :] = np.log1p(-k / j)
    return np.cumsum(terms)


def fail_ratio(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """``C(n-c, k) / C(n, k)`` = ``prod_{i=n-c+1..n} (1 - k/i)``, the chance a k-subset misses every correct one.

    The product is summed in log space from a cached cumulative table, so a whole task vector
    costs two gathers. Zero where ``n - c < k`` (every k-subset holds a correct sample).
    """
    n, c = np.asarray(n, dtype=np.int64), np.asarray(c, dtype=np.int64)
    table = _log_product_table(int(k), _table_size(int(n.max(initial=0))))
    out = np.exp(table[n] - table[n - c])
    return np.where(c == 0, 1.0, np.where(n - c < k, 0.0, out))
