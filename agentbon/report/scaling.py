"""The decision table's figures: gain per doubling, the fit, whether doubling still pays, N → 2N, targets.

Every figure uses the measured ks only (docs/estimators.md). A call on whether doubling pays rests
on the least-squares slope over at least two doublings and its bootstrap interval over tasks, so
one noisy doubling cannot flip it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentbon.metrics import (
    MIN_DOUBLINGS,
    ONE_POINT,
    loglinear_fit,
    percentile_interval,
    slope_weights,
    tail_slopes,
    verifier_ceiling,
)
from agentbon.report.compute import Curves, fraction
from agentbon.report.schema import Fit, Forecast, Scaling, SeriesScaling, StopCall, Target

FORECAST_DOUBLINGS = 2
"""The N → 2N forecast extends the fit over the last two measured doublings (the local rate)."""


def _p(x: float) -> float | None:
    """A fraction as points, rounded; None for NaN."""
    return None if not np.isfinite(x) else round(float(x) * 100, 3) + 0.0


def _interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    lo, hi = percentile_interval(np.asarray(samples, float).reshape(-1, 1), confidence)
    return float(lo[0]), float(hi[0])


def stop_call(ks: list[int], mean: np.ndarray, boot: np.ndarray, confidence: float,
              threshold: float = ONE_POINT) -> StopCall:  # fmt: skip
    """Whether doubling still pays, from slopes over the remaining doublings (two at least) and their intervals.

    ``stops`` from the first k whose slope's whole interval lies under ``threshold``; else ``pays``
    when the interval of the last two doublings' slope lies at or above it; else ``unclear``.
    """
    point, boots = tail_slopes(ks, mean), tail_slopes(ks, boot)
    out = StopCall(call="too few doublings", from_k=None, slope=None, lo=None, hi=None,
                   threshold_points=round(threshold * 100, 3), min_doublings=MIN_DOUBLINGS)  # fmt: skip
    if not point:
        return out
    for start, slope in point.items():
        lo, hi = _interval(boots[start], confidence)
        if hi < threshold:
            return out.model_copy(update=dict(call="stops", from_k=start, slope=_p(slope), lo=_p(lo), hi=_p(hi)))
    last = list(point)[-1]
    lo, hi = _interval(boots[last], confidence)
    call = "pays" if lo >= threshold else "unclear"
    return out.model_copy(update=dict(call=call, from_k=last, slope=_p(point[last]), lo=_p(lo), hi=_p(hi)))


def forecast(ks: list[int], mean: np.ndarray, boot: np.ndarray, confidence: float) -> Forecast | None:
    """The metric at 2K (K the largest measured k) from the fit a + b·log2 k over the last two doublings."""
    if len(ks) < 2:
        return None
    x = np.log2(np.asarray(ks, float))
    local = [i for i in range(len(ks)) if x[-1] - x[i] <= FORECAST_DOUBLINGS + 1e-9]
    lx = x[local]
    weights = 1.0 / len(local) + slope_weights([ks[i] for i in local]) * (x[-1] + 1 - lx.mean())
    # An accuracy stays in [0, 1]: clip the forecast (and its resamples) before taking the gain.
    value = float(np.clip(mean[local] @ weights, 0.0, 1.0))
    samples = np.clip(boot[:, local] @ weights, 0.0, 1.0)
    gain, gain_samples = value - float(mean[-1]), samples - boot[:, -1]
    lo, hi = _interval(samples, confidence)
    glo, ghi = _interval(gain_samples, confidence)
    return Forecast(from_k=ks[-1], to_k=2 * ks[-1], fitted_ks=[ks[i] for i in local], value=fraction(value),
                    lo=fraction(lo), hi=fraction(hi), gain=fraction(gain), gain_lo=fraction(glo),
                    gain_hi=fraction(ghi))  # fmt: skip


def targets(ks: list[int], mean: np.ndarray, wanted: Sequence[float]) -> list[Target]:
    """Per target: the first measured k that reached it, else the k the fit extrapolates beyond the data."""
    fit = loglinear_fit(ks, mean) if ks else None
    out = []
    for t in sorted({round(float(t), 4) for t in wanted if 0 < t <= 1}):
        # Targets are rounded to 4 decimals: a value within that rounding has reached its target.
        reached = next((k for k, v in zip(ks, mean, strict=True) if v >= t - 5.1e-5), None)
        k = None
        if reached is None and fit is not None:
            guess = fit.k_for(t)
            k = round(guess, 2) if np.isfinite(guess) and guess > ks[-1] else None
        out.append(Target(target=t, reached_at_k=reached, extrapolated_k=k))
    return out


def _series(curves: Curves, name: str, wanted: Sequence[float]) -> SeriesScaling:
    band = curves.coverage if name == "coverage" else curves.selected[name]
    boot = curves.boot.get(name)
    ks = [k for k, m in zip(curves.ks, curves.measured, strict=True) if m]
    mean = band.mean[curves.measured]
    all_gains = np.diff(band.mean) / np.log2(np.asarray(curves.ks[1:], float) / np.asarray(curves.ks[:-1], float))
    out = SeriesScaling(
        measured_ks=ks,
        gain=[fraction(g) for g in all_gains],
        fit=None,
        stop=stop_call([], mean[:0], np.empty((0, 0)), curves.confidence),
        forecast=None,
        targets=targets(ks, mean, wanted),
    )
    if not ks or boot is None:
        return out
    mboot = boot[:, curves.measured]
    fit = loglinear_fit(ks, mean)
    lo, hi = _interval(mboot @ slope_weights(ks), curves.confidence) if len(ks) > 1 else (np.nan, np.nan)
    out.fit = Fit(a=fraction(fit.a), points_per_doubling=_p(fit.b), lo=_p(lo), hi=_p(hi), r2=round(fit.r2, 4), ks=ks)
    out.stop = stop_call(ks, mean, mboot, curves.confidence)
    out.forecast = forecast(ks, mean, mboot, curves.confidence)
    return out


def scaling(curves: Curves, wanted: Sequence[float] = ()) -> Scaling:
    """The decision table: gain per doubling, the fit, whether doubling pays, N → 2N, the verifier ceiling."""
    cov = curves.coverage.mean[curves.measured]
    last = float(cov[-1]) if cov.size else np.nan
    out = Scaling(coverage=_series(curves, "coverage", [*wanted, last + 0.05, last + 0.10]), selectors={})
    ks = out.coverage.measured_ks
    for name, band in curves.selected.items():
        sel = band.mean[curves.measured]
        top = float(sel[-1]) if sel.size else np.nan
        block = _series(curves, name, [*wanted, top + 0.05, top + 0.10, last])
        block.verifier_ceiling_at_k = verifier_ceiling(ks, cov, sel) if len(ks) > 1 else None
        out.selectors[name] = block
    return out
