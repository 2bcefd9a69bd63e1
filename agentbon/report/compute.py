"""The report's metrics from per-task arrays: curves with bootstrap bands, scaling and flags.

Pure functions over arrays (no store, no rendering), so the benchmark can time them on synthetic
data of any size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agentbon.metrics import (
    bootstrap_means,
    doubling_stops_paying,
    gap_recovered,
    loglinear_fit,
    pass_at_k,
    per_doubling_gains,
    percentile_interval,
    selected_at_k,
    verifier_ceiling,
)


@dataclass
class Band:
    """A metric per k with its bootstrap interval."""

    mean: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def as_dict(self) -> dict[str, list[float]]:
        return {"mean": _r(self.mean), "lo": _r(self.lo), "hi": _r(self.hi)}


@dataclass
class Curves:
    """Everything the scaling plots and tables show, per k."""

    ks: list[int]
    tasks: int
    coverage: Band
    selected: dict[str, Band]
    loss: dict[str, Band]
    gap: dict[str, Band]
    per_task_coverage: np.ndarray
    per_task_selected: dict[str, np.ndarray]


def _r(values: np.ndarray) -> list[float]:
    return [round(float(v), 6) + 0.0 for v in np.asarray(values).ravel()]  # + 0.0: no -0.0 in the JSON


def _band(samples: np.ndarray, mean: np.ndarray, confidence: float) -> Band:
    lo, hi = percentile_interval(samples, confidence)
    return Band(mean=mean, lo=lo, hi=hi)


def compute_curves(
    correct: np.ndarray,
    valid: np.ndarray,
    scores: dict[str, np.ndarray],
    ks: Sequence[int],
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Curves:
    """Coverage@k and, per selector, selected@k, loss@k and gap recovered@k with bootstrap bands over tasks.

    ``ks`` must start at 1 (pass@1 is the gap's baseline). Every series is resampled with the same
    task draws, so a selector's loss band is the band of a difference, not a difference of bands.
    """
    if not ks or ks[0] != 1:
        raise ValueError(f"ks must start at 1, got {list(ks)}")
    tasks = correct.shape[0]
    n = valid.sum(axis=1)
    c = (correct * valid).sum(axis=1).round().astype(np.int64)
    cov = np.asarray(pass_at_k(n, c, list(ks))).reshape(tasks, len(ks))
    names = list(scores)
    sel = {name: np.asarray(selected_at_k(scores[name], correct, list(ks))).reshape(tasks, len(ks)) for name in names}
    empty = Band(np.zeros(len(ks)), np.zeros(len(ks)), np.zeros(len(ks)))
    if tasks == 0:
        zero = {name: empty for name in names}
        return Curves(list(ks), 0, empty, zero, zero, zero, cov, sel)
    stacked = np.stack([cov, *(sel[name] for name in names)], axis=1)  # (tasks, 1 + S, K)
    means = stacked.mean(axis=0)
    boot = bootstrap_means(stacked, n_boot=n_boot, seed=seed)  # (B, 1 + S, K)
    boot_cov, boot_p1 = boot[:, 0], boot[:, 0, :1]
    out = Curves(list(ks), tasks, _band(boot_cov, means[0], confidence), {}, {}, {}, cov, sel)
    for s, name in enumerate(names, start=1):
        out.selected[name] = _band(boot[:, s], means[s], confidence)
        out.loss[name] = _band(boot_cov - boot[:, s], means[0] - means[s], confidence)
        gap_mean = np.asarray(gap_recovered(means[s], means[0], means[0, :1]))
        out.gap[name] = _band(np.asarray(gap_recovered(boot[:, s], boot_cov, boot_p1)), gap_mean, confidence)
    return out


def scaling(curves: Curves, targets: Sequence[float] = ()) -> dict:
    """The decision table: gain per doubling, where doubling stops paying, the verifier ceiling, fits."""
    ks = curves.ks
    cov = curves.coverage.mean

    def fit(values: np.ndarray, extra_targets: Sequence[float]) -> dict:
        f = loglinear_fit(ks, values)
        wanted = sorted({round(float(t), 4) for t in extra_targets if 0 < t <= 1})
        k_for = {f"{t:.4f}": _finite(f.k_for(t)) for t in wanted}
        return {"a": round(f.a, 6), "points_per_doubling": round(f.b * 100, 3), "r2": round(f.r2, 4), "k_for": k_for}

    last = float(cov[-1]) if len(cov) else 0.0
    out: dict = {
        "ks": ks,
        "coverage": {
            "gain": _r(per_doubling_gains(ks, cov)) if len(ks) > 1 else [],
            "stops_paying_at_k": doubling_stops_paying(ks, cov) if len(ks) > 1 else None,
            "fit": fit(cov, [*targets, last + 0.05, last + 0.10]),
        },
        "selectors": {},
    }
    for name, band in curves.selected.items():
        sel = band.mean
        top = float(sel[-1])
        out["selectors"][name] = {
            "gain": _r(per_doubling_gains(ks, sel)) if len(ks) > 1 else [],
            "stops_paying_at_k": doubling_stops_paying(ks, sel) if len(ks) > 1 else None,
            "verifier_ceiling_at_k": verifier_ceiling(ks, cov, sel) if len(ks) > 1 else None,
            "fit": fit(sel, [*targets, top + 0.05, top + 0.10, last]),
        }
    return out


def _finite(x: float) -> float | None:
    return None if not np.isfinite(x) else round(float(x), 2)
