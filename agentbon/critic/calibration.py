"""Calibration and ranking metrics for a critic's probabilities: AUROC, expected calibration error, Brier score."""

from __future__ import annotations

import numpy as np


def auroc(labels: np.ndarray, scores: np.ndarray) -> float | None:
    """Area under the ROC curve (Mann-Whitney, ties counted half); None when only one class is present."""
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    pos, neg = int(y.sum()), int((~y).sum())
    if pos == 0 or neg == 0:
        return None
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=np.float64)
    sorted_s = s[order]
    i = 0
    while i < len(s):  # average ranks over ties
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return float((ranks[y].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


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
