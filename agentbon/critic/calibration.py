"""Calibration and ranking metrics for a critic's probabilities: AUROC, expected calibration error, Brier score."""

from __future__ import annotations

from typing import Any

import numpy as np


def auroc(labels: np.ndarray, scores: np.ndarray) -> float | None:
    """Area under the ROC curve (Mann-Whitney, ties counted half); None when only one class is present."""
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    positive, negative = np.sort(s[y]), np.sort(s[~y])
    if len(positive) == 0 or len(negative) == 0:
        return None
    # Per passing score, the failing scores below it and those equal to it (sorted needles: one merge-like pass;
    # three times faster than ranking every score with np.unique at 2.5 million scores, report_bench.py).
    below = np.searchsorted(negative, positive, "left")
    upto = np.searchsorted(negative, positive, "right")
    wins = float(below.sum()) + 0.5 * float((upto - below).sum())
    return wins / (len(positive) * len(negative))


def ece(labels: np.ndarray, probs: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error over equal-width probability bins."""
    y = np.asarray(labels, dtype=np.float64)
    p = np.clip(np.asarray(probs, dtype=np.float64), 0.0, 1.0)
    if len(p) == 0:
        return 0.0
    which = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        mask = which == b
        if mask.any():
            total += mask.sum() / len(p) * abs(p[mask].mean() - y[mask].mean())
    return float(total)


def brier(labels: np.ndarray, probs: np.ndarray) -> float:
    """Mean squared error of the probabilities."""
    y = np.asarray(labels, dtype=np.float64)
    return float(np.mean((np.asarray(probs, dtype=np.float64) - y) ** 2)) if len(y) else 0.0


def report(labels: np.ndarray, probs: np.ndarray) -> dict[str, float | int | None]:
    """AUROC, ECE, Brier, counts."""
    y = np.asarray(labels)
    return {
        "n": int(len(y)),
        "positives": int(np.sum(y)),
        "auroc": auroc(y, probs),
        "ece": ece(y, probs),
        "brier": brier(y, probs),
    }


# ------------------------------------------------------------------------------------ intervals over tasks

FINE = 50
"""Fewest rank bins of the per-task histograms the AUROC bootstrap resamples (``rank_bins``)."""
AUROC_CELLS = 500_000
"""Most cells (tasks x rank bins) of those histograms: as many bins as that allows, at least ``FINE``; each costs
its share of a product per resample, as much as the whole histograms did at 10,000 tasks (report_bench.py)."""
RESAMPLES = 200
"""Most bootstrap resamples of the calibration intervals: each costs a product of (tasks x histogram width), and
at 10,000 tasks a thousand of them would take longer than the rest of the report (benchmarks/report_bench.py)."""


def rank_bins(labels: np.ndarray, scores: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Each score's rank bin and, per bin, the AUROC of the (passing, failing) pairs inside it (ties half).

    Bins are runs of the sorted scores, a tie group never split: one bin per distinct score where there are at most
    ``width`` of them, else about ``len / width`` scores each. A pair in two bins is ordered by its bins, so the
    resampled AUROC (``from_stats``) is exact but for pairs inside one bin, which it credits at that bin's own AUROC:
    exact at the point, and in every resample while the scores take at most ``width`` values.
    """
    y = np.asarray(labels, dtype=bool)
    order = np.argsort(np.asarray(scores, dtype=np.float64), kind="stable")
    ordered, passing = np.asarray(scores, dtype=np.float64)[order], y[order]
    m = len(ordered)
    if m == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    first = np.r_[True, ordered[1:] != ordered[:-1]]  # the first of each tie group
    starts, group = np.flatnonzero(first), np.cumsum(first) - 1
    if len(starts) <= width:
        group_bin = np.arange(len(starts))
    else:
        group_bin = np.unique(starts * width // m, return_inverse=True)[1]
    sorted_bin = group_bin[group]
    failing = (~passing).astype(np.float64)
    before = np.cumsum(failing) - failing  # failing scores before each position
    bin_starts = np.flatnonzero(np.r_[True, sorted_bin[1:] != sorted_bin[:-1]])
    tied = np.bincount(group, weights=failing)[group]
    below = before[starts][group] - before[bin_starts][sorted_bin]  # failing scores lower, in the same bin
    size = int(sorted_bin[-1]) + 1
    wins = np.bincount(sorted_bin[passing], weights=(below + 0.5 * tied)[passing], minlength=size)
    pairs = np.bincount(sorted_bin[passing], minlength=size) * np.bincount(sorted_bin[~passing], minlength=size)
    inside = np.where(pairs > 0, wins / np.maximum(pairs, 1), 0.5)
    out = np.empty(m, np.int64)
    out[order] = sorted_bin
    return out, inside


def task_stats(
    labels: np.ndarray, probs: np.ndarray, rows: np.ndarray, tasks: int, bins: int = 10, cells: int = AUROC_CELLS
) -> tuple[np.ndarray, np.ndarray]:
    """Per task, the sums every metric needs: histograms of passing and failing scores over rank bins
    (``rank_bins``), per reliability bin the count, sum of scores and passes, the squared error and the count;
    shape ``(tasks, F)``, with the rank bins' own AUROCs. Sums over a resample of tasks give that resample's metrics
    (``from_stats``)."""
    y = np.asarray(labels, dtype=np.float64)
    p = np.clip(np.asarray(probs, dtype=np.float64), 0.0, 1.0)
    rank, inside = rank_bins(y > 0, probs, max(FINE, cells // max(tasks, 1)))
    width = len(inside)
    coarse = np.minimum((p * bins).astype(int), bins - 1)
    rows = np.asarray(rows, dtype=np.int64)
    rank_key, coarse_key = rows * width + rank, rows * bins + coarse

    def per(key: np.ndarray, size: int, weights: np.ndarray | None = None) -> np.ndarray:
        return np.bincount(key, weights=weights, minlength=tasks * size).reshape(tasks, size)

    passing = per(rank_key, width, y)
    stats = np.hstack([
        passing, per(rank_key, width) - passing,
        per(coarse_key, bins), per(coarse_key, bins, p), per(coarse_key, bins, y),
        np.bincount(rows, weights=(p - y) ** 2, minlength=tasks)[:, None],
        np.bincount(rows, minlength=tasks)[:, None].astype(np.float64),
    ])  # fmt: skip
    return stats, inside


def from_stats(stats: np.ndarray, inside: np.ndarray, bins: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """AUROC (NaN where one class is absent), ECE and Brier of summed stats; ``stats`` is ``(..., F)``, ``inside``
    the rank bins' own AUROCs (``task_stats``)."""
    width = len(inside)
    pos, neg = stats[..., :width], stats[..., width : 2 * width]
    below = np.cumsum(neg, axis=-1) - neg  # failing scores in lower bins
    wins = (pos * (below + inside * neg)).sum(axis=-1)
    pairs = pos.sum(axis=-1) * neg.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = np.where(pairs > 0, wins / np.where(pairs > 0, pairs, 1.0), np.nan)
        base = 2 * width
        mean_p = stats[..., base + bins : base + 2 * bins]
        passes = stats[..., base + 2 * bins : base + 3 * bins]
        total = np.maximum(stats[..., base + 3 * bins + 1], 1e-12)
        ece_ = np.abs(mean_p - passes).sum(axis=-1) / total  # sum over bins of |sum p - sum y| / n
        brier_ = stats[..., base + 3 * bins] / total
    return auc, ece_, brier_


def measure(
    labels: np.ndarray, probs: np.ndarray, rows: np.ndarray, tasks: int, n_boot: int, confidence: float, seed: int,
    bins: int = 10, cells: int = AUROC_CELLS,
) -> dict[str, Any]:
    """Counts, AUROC / ECE / Brier each as ``{mean, lo, hi}`` (percentile bootstrap over tasks: each resample draws
    whole tasks; AUROC's is the rank statistic of the resampled candidates, ``rank_bins``, its interval holding its
    point) and the reliability diagram's points, from one pass over the scores (``task_stats``)."""
    from agentbon.metrics.bootstrap import bootstrap_means, percentile_interval

    stats, inside = task_stats(labels, probs, rows, tasks, bins, cells)
    total = stats.sum(axis=0)
    _, ece_, brier_ = from_stats(total, inside, bins)
    point = {"auroc": auroc(labels, probs), "ece": float(ece_), "brier": float(brier_)}
    resamples = min(n_boot, RESAMPLES)
    means = bootstrap_means(stats, n_boot=resamples, seed=seed)
    out: dict[str, Any] = {"n": int(len(labels)), "positives": int(np.sum(labels))}
    for name, values in zip(("auroc", "ece", "brier"), from_stats(means, inside, bins), strict=True):
        finite = values[np.isfinite(values)]
        lo = hi = None
        at = point[name]
        if at is not None and len(finite) >= max(2, resamples // 2):  # else mostly one class: no interval
            low, high = percentile_interval(finite, confidence)
            lo, hi = float(low), float(high)
            if name == "auroc":  # held to its point: the resamples' sums may round an ulp to one side of it
                lo, hi = min(lo, at), max(hi, at)
        out[name] = {"mean": point[name], "lo": lo, "hi": hi}
    base = 2 * len(inside)
    count, summed, passed = (total[base + i * bins : base + (i + 1) * bins] for i in range(3))
    out["bins"] = [
        {"lo": b / bins, "hi": (b + 1) / bins, "count": int(count[b]), "mean_score": round(float(summed[b] / count[b]), 6),
         "pass_rate": round(float(passed[b] / count[b]), 6)}
        for b in range(bins) if count[b] > 0
    ]  # fmt: skip
    return out
