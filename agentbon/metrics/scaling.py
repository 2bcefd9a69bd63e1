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


def doubling_stops_paying(
    ks: Sequence[int], values: Sequence[float] | np.ndarray, threshold: float = ONE_POINT
) -> int | None:
    """The first k from which doubling buys less than ``threshold`` (one point); None if it always pays."""
    gains = per_doubling_gains(ks, values)
    for k, gain in zip(ks[:-1], gains, strict=True):
        if gain < threshold:
            return int(k)
    return None


def verifier_ceiling(
    ks: Sequence[int],
    coverage: Sequence[float] | np.ndarray,
    selected: Sequence[float] | np.ndarray,
    threshold: float = ONE_POINT,
) -> int | None:
    """The first k where selected flattens (gain < threshold) while coverage still rises (gain ≥ threshold).

    That shape means more samples keep finding solutions the selector cannot pick: the verifier,
    not the generator, is the ceiling. None when it does not occur.
    """
    cov_gain = per_doubling_gains(ks, coverage)
    sel_gain = per_doubling_gains(ks, selected)
    for k, cg, sg in zip(ks[:-1], cov_gain, sel_gain, strict=True):
        if sg < threshold <= cg:
            return int(k)
    return None
