"""``select.flagged_fallback: flagged`` inside each k-subset (docs/estimators.md, "The flagged fallback").

A selector chooses among a subset's candidates without a blocking flag (the preferred ones, U); only a subset that
holds none of them but some flagged candidates (F) lets it choose among those. Split by whether the subset misses
U, for any selector:

    selected@k = sel@k(U candidates, F none) + C(n − u, k) / C(n, k) · sel@k(F candidates, over the n − u others)

The first term is the selector's curve with flagged candidates left out (a subset without U chooses nothing there).
A uniform k-subset that misses U is a uniform k-subset of the n − u other samples, which the second term averages
over; ``k > n − u`` weighs 0 (every such subset holds a preferred one), and ``k > n`` is scored as ``k = n``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentbon.metrics.combinatorics import fail_ratio


def missing_preferred(n: np.ndarray, u: np.ndarray, ks: Sequence[int]) -> np.ndarray:
    """(tasks, ks): the chance a uniform k-subset of a task's ``n`` samples holds none of its ``u`` preferred ones."""
    n, u = np.asarray(n, dtype=np.int64), np.asarray(u, dtype=np.int64)
    return np.stack([fail_ratio(n, u, int(k)) for k in ks], axis=-1).reshape(n.size, len(ks))


def with_fallback(
    preferred: np.ndarray, fallback: np.ndarray, n: np.ndarray, u: np.ndarray, ks: Sequence[int]
) -> np.ndarray:
    """selected@k per task and k from its two terms: ``preferred`` (flagged ones left out), ``fallback`` (the choice
    among the flagged ones over the samples that are not preferred), ``n`` samples and ``u`` preferred per task."""
    return np.asarray(preferred) + missing_preferred(n, u, ks) * np.asarray(fallback)


def among_whole(preferred: np.ndarray, fallback: np.ndarray | None, sample: np.ndarray) -> np.ndarray:
    """The candidates a choice among all of a task's samples (k = n) reads: the preferred ones of the sample, or the
    fallback's where the sample holds no preferred one (the rule above at k = n)."""
    mine = preferred & sample
    if fallback is None:
        return mine
    return np.where(mine.any(axis=1, keepdims=True), mine, fallback & sample)
