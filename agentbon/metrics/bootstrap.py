"""Bootstrap confidence intervals over tasks, seeded and vectorised."""

from __future__ import annotations

import numpy as np


def bootstrap_means(per_task: np.ndarray, n_boot: int = 1000, seed: int = 0, chunk: int = 64) -> np.ndarray:
    """Means of ``n_boot`` resamples of the task rows (with replacement): shape ``(n_boot, *per_task.shape[1:])``.

    Every column is resampled with the same task draws, so differences and ratios of columns
    (selection loss, gap recovered) get consistent intervals. Draws become per-task counts and one
    matrix product per chunk, so memory stays at ``chunk × tasks`` whatever the metric count.
    """
    data = np.asarray(per_task, dtype=np.float64)
    if data.ndim == 0 or data.shape[0] == 0:
        raise ValueError("bootstrap needs at least one task")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    tasks = data.shape[0]
    flat = data.reshape(tasks, -1)
    rng = np.random.default_rng(seed)
    out = np.empty((n_boot, flat.shape[1]))
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        draws = rng.integers(0, tasks, size=(size, tasks)) + (np.arange(size) * tasks)[:, None]
        counts = np.bincount(draws.ravel(), minlength=size * tasks).reshape(size, tasks).astype(np.float64)
        out[start : start + size] = counts @ flat / tasks
    return out.reshape((n_boot, *data.shape[1:]))


def percentile_interval(samples: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The central ``confidence`` interval of bootstrap samples along axis 0 (percentile method)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(samples, [tail, 100 - tail], axis=0)
    return lo, hi


def bootstrap_ci(
    per_task: np.ndarray, n_boot: int = 1000, confidence: float = 0.95, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of the mean over tasks, per column of ``per_task``."""
    return percentile_interval(bootstrap_means(per_task, n_boot=n_boot, seed=seed), confidence)
