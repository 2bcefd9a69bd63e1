"""How a metric scales with k: gain per doubling, a log-linear fit, and where doubling stops paying."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ONE_POINT = 0.01
"""One percentage point, in the [0, 1] units every metric here uses."""


def doubling_ks(n: int) -> list[int]:
    """1, 2, 4, … up to n, with n itself appended when it is not a power of two."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    ks = [1 << i for i in range(int(math.log2(n)) + 1)]
    return ks if ks[-1] == n else [*ks, n]


def _check(ks: Sequence[int], values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = np.asarray(ks, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if k.ndim != 1 or v.shape[:1] != k.shape:
        raise ValueError(f"values ({v.shape}) must have one entry per k ({k.shape})")
    if k.size and ((k < 1).any() or (np.diff(k) <= 0).any()):
        raise ValueError(f"ks must be increasing and >= 1, got {list(ks)}")
    return k, v


def per_doubling_gains(ks: Sequence[int], values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Gain per doubling between consecutive ks, ``(v[i+1] − v[i]) / log2(k[i+1]/k[i])``.

    For ks = 1, 2, 4, … this is exactly metric@2k − metric@k; a last step that is not a full
    doubling (16 → 24) is scaled to one. Extra axes of ``values`` (series) are kept.
    """
    k, v = _check(ks, values)
    steps = np.log2(k[1:] / k[:-1]).reshape((-1,) + (1,) * (v.ndim - 1))
    return np.diff(v, axis=0) / steps


@dataclass(frozen=True)
class LoglinearFit:
    """metric ≈ a + b·log2 k, fitted by least squares."""

    a: float
    b: float
    """Points (as a fraction) gained per doubling of k."""
    r2: float

    def predict(self, k: float | np.ndarray) -> float | np.ndarray:
        """The fitted metric at k."""
        return self.a + self.b * np.log2(k)

    def k_for(self, target: float) -> float:
        """The k the fit needs to reach ``target``; ``inf`` when the fit never gets there."""
        if self.b <= 0:
            return 1.0 if self.a >= target else math.inf
        exponent = (target - self.a) / self.b
        return math.inf if exponent > 1000 else max(1.0, 2.0**exponent)


def loglinear_fit(ks: Sequence[int], values: Sequence[float] | np.ndarray) -> LoglinearFit:
    """Least-squares fit of ``values ≈ a + b·log2 k``; R² is 1.0 for a perfectly flat or exact fit."""
    k, v = _check(ks, values)
    if v.ndim != 1 or v.size == 0:
        raise ValueError("loglinear_fit needs one value per k")
    x = np.log2(k)
    if v.size == 1 or np.ptp(x) == 0:
        return LoglinearFit(a=float(v.mean()), b=0.0, r2=1.0)
    b, a = np.polyfit(x, v, 1)
    residual = float(((v - (a + b * x)) ** 2).sum())
    total = float(((v - v.mean()) ** 2).sum())
    r2 = 1.0 if total <= 1e-24 else max(0.0, 1.0 - residual / total)
    return LoglinearFit(a=float(a), b=float(b), r2=r2)


MIN_DOUBLINGS = 2
"""A "stops paying" call rests on the slope over at least this many doublings, never on one alone."""


def slope_weights(ks: Sequence[int]) -> np.ndarray:
    """Weights ``w`` with ``w @ values`` = the least-squares slope of values on log2 k (linear in the values)."""
    x = np.log2(np.asarray(ks, dtype=np.float64))
    centred = x - x.mean()
    denom = float((centred**2).sum())
    return centred / denom if denom > 0 else np.zeros_like(x)


def tail_slopes(ks: Sequence[int], values: Sequence[float] | np.ndarray, min_doublings: int = MIN_DOUBLINGS) -> dict:
    """Per start k, the least-squares points-per-doubling slope over ``ks[start:]`` (at least ``min_doublings``).

    Values may carry extra leading axes (bootstrap samples): ``values[..., i]`` belongs to ``ks[i]``.
    Returns ``{k_start: slope}`` (slopes with the leading axes) for every start that spans enough doublings.
    """
    k = np.asarray(ks, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    out = {}
    for i in range(len(ks)):
        if np.log2(k[-1] / k[i]) < min_doublings - 1e-9:
            break
        out[int(ks[i])] = v[..., i:] @ slope_weights(ks[i:])
    return out


def doubling_stops_paying(
    ks: Sequence[int], values: Sequence[float] | np.ndarray, threshold: float = ONE_POINT
) -> int | None:
    """The first k from which the fitted slope over every later doubling (two at least) is under ``threshold``.

    One noisy doubling cannot decide it: gains of 5, 0.5, 9.5, 10 points do not stop at k = 2,
    because the slope from k = 2 on is about 7 points. None when no such k (within ``ks``).
    """
    _check(ks, values)
    for start, slope in tail_slopes(ks, values).items():
        if slope < threshold:
            return start
    return None


def verifier_ceiling(
    ks: Sequence[int],
    coverage: Sequence[float] | np.ndarray,
    selected: Sequence[float] | np.ndarray,
    threshold: float = ONE_POINT,
) -> int | None:
    """The first k from which selected flattens (slope < threshold) while coverage still rises (slope ≥ threshold).

    Slopes are least-squares over every later doubling (two at least), as in :func:`doubling_stops_paying`.
    That shape means more samples keep finding solutions the selector cannot pick: the verifier,
    not the generator, is the ceiling. None when it does not occur.
    """
    _check(ks, coverage), _check(ks, selected)
    cov, sel = tail_slopes(ks, coverage), tail_slopes(ks, selected)
    for start in cov:
        if sel[start] < threshold <= cov[start]:
            return start
    return None
