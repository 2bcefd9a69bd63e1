"""Brute-force enumeration of a softmax draw over every k-subset (shared by the estimator tests)."""

from __future__ import annotations

import itertools
import math


def brute(logits: list[float], y: list[float], k: int) -> float:
    """Mean over every k-subset of the softmax draw's expected correctness (weight-0 subsets: uniform)."""
    n = len(logits)
    total, count = 0.0, 0
    for subset in itertools.combinations(range(n), min(k, n)):
        top = max(logits[i] for i in subset)
        w = [math.exp(logits[i] - top) if logits[i] > -math.inf else 0.0 for i in subset]
        ys = [y[i] for i in subset]
        total += sum(wi * yi for wi, yi in zip(w, ys, strict=True)) / sum(w) if sum(w) > 0 else sum(ys) / len(ys)
        count += 1
    return total / count
