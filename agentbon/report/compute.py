"""The report's metrics from per-task arrays: curves with bootstrap bands over the tasks that have samples.

Pure functions over arrays (no store, no rendering), so the benchmark can time them on synthetic
data of any size. A metric@k is *measured* only where every task in the curves has at least k
samples in its curve sample; elsewhere it is NaN (``None`` in ``summary.json``), never clamped.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal, TypeVar

import numpy as np

from agentbon.metrics import (
    bootstrap_means,
    gap_recovered,
    pass_at_k,
    percentile_interval,
    selected_at_k,
    softmax_selected_at_k,
)
from agentbon.metrics.fallback import with_fallback
from agentbon.metrics.majority import MAX_EXACT_N, exact_majority_work, majority_selected_at_k
from agentbon.metrics.majority_estimate import majority_selected_at_k_estimate
from agentbon.metrics.softmax_estimate import SampledEstimate, softmax_selected_at_k_estimate
from agentbon.metrics.tournament import tournament_selected_at_k
from agentbon.select.base import Estimator

__all__ = ["Estimator"]

SoftmaxMode = Literal["auto", "exact", "estimate"]
"""How a softmax or majority selector's selected@k is computed: ``exact`` always (the softmax: O(n²) per task at
~150 quadrature nodes, minutes at 10,000 x 256); ``estimate`` always (:mod:`agentbon.metrics.softmax_estimate`,
:mod:`agentbon.metrics.majority_estimate`: unbiased, with the Monte Carlo standard error); ``auto``: exact while
its work is at most ``EXACT_SOFTMAX_WORK`` / ``EXACT_MAJORITY_WORK``, else estimated."""

EXACT_SOFTMAX_WORK = 600_000
"""``auto``'s limit on the exact softmax's work, in :func:`exact_softmax_work`'s units: about half a second here
(measured 0.12 ms a task at n = 4, 0.44 at 16, 4.5 at 64, 52 at 256: about 0.1 ms + 0.8 µs x n²)."""
EXACT_MAJORITY_WORK = 1_000_000
"""``auto``'s limit on the exact majority vote's work, in :func:`~agentbon.metrics.majority.exact_majority_work`'s
units: about a second here at most (docs/estimators.md, section 4, "majority")."""
ESTIMATE_SAMPLES = 2_560_000
"""Samples x draws the estimate is given: one draw of each kind at 10,000 x 256 (about 0.1 s here), up to
``MAX_DRAWS`` draws on smaller runs, so its Monte Carlo error shrinks as the run does."""
MAX_DRAWS = 64


def exact_softmax_work(counts: np.ndarray) -> int:
    """The exact softmax's cost for tasks with these sample counts: Σ (125 + n²) over tasks with a sample."""
    n = np.asarray(counts, dtype=np.int64)
    return int(((125 + n * n) * (n > 0)).sum())


@dataclass
class Band:
    """A metric per k with its bootstrap interval (NaN where not measured)."""

    mean: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


@dataclass
class Curves:
    """Everything the scaling plots and tables show, per k."""

    ks: list[int]
    tasks: int
    """Tasks in the curves: those with at least one sample in their curve sample."""
    coverage: Band
    selected: dict[str, Band]
    loss: dict[str, Band]
    gap: dict[str, Band]
    per_task_coverage: np.ndarray
    """(all tasks, ks): NaN for a task without samples and where k exceeds the task's sample count."""
    per_task_selected: dict[str, np.ndarray]
    estimated: dict[str, SampledEstimate] = field(default_factory=dict)
    """Selectors whose selected@k is an unbiased estimate (a softmax too large to sum exactly), with its Monte Carlo
    standard error per k; the others are exact."""
    measured: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    """Per k: every task in the curves has at least k samples."""
    included: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    """Per task row: in the curves (at least one sample)."""
    boot: dict[str, np.ndarray] = field(default_factory=dict)
    """``coverage`` and each selector's name → bootstrap means, shape (resamples, ks); NaN where not measured."""
    confidence: float = 0.95


def fraction(x: float) -> float | None:
    """A fraction as ``summary.json`` writes it: 6 decimals, no -0.0; None for NaN (a k not measured)."""
    return None if not np.isfinite(x) else round(float(x), 6) + 0.0


def _band(samples: np.ndarray, mean: np.ndarray, confidence: float) -> Band:
    lo, hi = percentile_interval(samples, confidence)
    return Band(mean=mean, lo=lo, hi=hi)


def as_estimator_scores(scores: np.ndarray, estimator: Estimator, candidate: np.ndarray) -> np.ndarray:
    """The recorded scores in the form the estimator reads; ``candidate`` marks the samples the selector could pick.

    NaN stays (not a sample); a sample that is no candidate (empty patch, patch that does not
    apply, a flag the run does not accept) ranks below every candidate, has weight 0 in a softmax, or is in no
    cluster of a vote (``-inf``).
    """
    s = np.asarray(scores, dtype=np.float64)
    if estimator == "uniform":
        return np.where(np.isnan(s), np.nan, np.where(candidate, 0.0, -np.inf))  # candidates tied: uniform
    if estimator == "softmax":
        return np.where(np.isnan(s), np.nan, np.where(candidate & np.isfinite(s), s, -np.inf))
    return np.where(np.isnan(s) | candidate, s, -np.inf)


def _selected(
    scores: np.ndarray, correct: np.ndarray, curve: np.ndarray, ks: list[int], est: Estimator, mode: SoftmaxMode, seed: int,
    prefs: dict[int, np.ndarray] | None = None,
) -> np.ndarray | SampledEstimate:  # fmt: skip
    s = np.where(curve, scores, np.nan)
    if est == "tournament":  # exact up to MAX_SUBSETS subsets of a task at a k, else drawn subsets
        return tournament_selected_at_k(s, correct, prefs or {}, ks, seed=seed)
    if est not in ("softmax", "majority"):
        return np.asarray(selected_at_k(s, correct, ks))
    counts = curve.sum(axis=1)
    exact: Callable[..., np.ndarray | float]
    estimate: Callable[..., SampledEstimate]
    if est == "softmax":
        exact, estimate = softmax_selected_at_k, softmax_selected_at_k_estimate
        cheap = exact_softmax_work(counts) <= EXACT_SOFTMAX_WORK
    else:
        exact, estimate = majority_selected_at_k, majority_selected_at_k_estimate
        cheap = int(counts.max(initial=0)) <= MAX_EXACT_N and exact_majority_work(s) <= EXACT_MAJORITY_WORK
    if mode == "exact" or (mode == "auto" and cheap):
        return np.asarray(exact(s, correct, ks))
    draws = int(np.clip(ESTIMATE_SAMPLES // max(int(counts.sum()), 1), 1, MAX_DRAWS))
    return estimate(s, correct, ks, draws=draws, seed=seed)


def _add_fallback(
    preferred: np.ndarray | SampledEstimate, alone: np.ndarray | SampledEstimate, n: np.ndarray, u: np.ndarray,
    ks: list[int],
) -> np.ndarray | SampledEstimate:  # fmt: skip
    """The two terms of :func:`agentbon.metrics.fallback.with_fallback`; where either is an estimate (independent
    draws), the standard errors add in quadrature, an upper bound since the second term's weight is at most 1."""
    values = [x.values if isinstance(x, SampledEstimate) else np.asarray(x) for x in (preferred, alone)]
    total = with_fallback(values[0].reshape(n.size, len(ks)), values[1].reshape(n.size, len(ks)), n, u, ks)
    sampled = [x for x in (preferred, alone) if isinstance(x, SampledEstimate)]
    if not sampled:
        return total
    se = np.sqrt(sum((x.se**2 for x in sampled), np.zeros(len(ks))))
    return SampledEstimate(values=total, se=se, draws=min(x.draws for x in sampled))


PARALLEL_CELLS = 1_000_000
"""Samples (tasks x N) from which the report's independent parts are computed in threads (below, threads cost
more than they save)."""

T = TypeVar("T")
R = TypeVar("R")


def mapped(fn: Callable[[T], R], items: Sequence[T], samples: int) -> list[R]:
    """``fn`` over ``items``, in threads (one each, as many at a time as there are cores) where there are at least
    ``PARALLEL_CELLS`` samples: numpy's sorts, searches and products release the GIL (benchmarks/report_bench.py).
    The results are the serial computation's, in the items' order."""
    workers = min(len(items), os.cpu_count() or 1)
    if workers > 1 and samples >= PARALLEL_CELLS:
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(fn, items))
    return [fn(item) for item in items]


def compute_curves(
    correct: np.ndarray,
    valid: np.ndarray,
    scores: dict[str, np.ndarray],
    ks: Sequence[int],
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    estimators: dict[str, Estimator] | None = None,
    candidates: dict[str, np.ndarray] | None = None,
    softmax: SoftmaxMode = "auto",
    majority: SoftmaxMode = "auto",
    fallbacks: dict[str, np.ndarray] | None = None,
    comparisons: dict[str, dict[int, np.ndarray]] | None = None,
) -> Curves:
    """Coverage@k and, per selector, selected@k, loss@k and gap recovered@k with bootstrap bands over tasks.

    ``valid`` is the curve sample (tasks × rollouts). ``ks`` must start at 1 (pass@1 is the gap's
    baseline). Tasks without a sample are left out; a k above some task's sample count is not
    measured (NaN). Every series is resampled with the same task draws, so a selector's loss band
    is the band of a difference, not a difference of bands. ``estimators`` names how each
    selector's scores are read (default ``rank``); ``candidates`` marks, per selector, the samples it
    could pick (default: all), which every estimator chooses among: a
    k-subset with no candidate counts as no choice (unsolved), whatever its samples' grades. A ``majority``
    selector's scores are its cluster labels (equal label, identical patch). ``softmax`` and ``majority`` say how
    those selectors are computed (:data:`SoftmaxMode`); an estimate's tasks are independent, so the bootstrap over
    tasks carries its Monte Carlo noise, and ``Curves.estimated`` gives its standard error. ``fallbacks`` marks, per
    selector, the samples it chooses among in a subset that holds none of its ``candidates``
    (``select.flagged_fallback``, :mod:`agentbon.metrics.fallback`); their scores are the ones it gives them there.
    ``comparisons``: per ``tournament`` selector, per task row, its recorded pairwise comparisons
    (:mod:`agentbon.metrics.tournament`).
    """
    if not ks or ks[0] != 1:
        raise ValueError(f"ks must start at 1, got {list(ks)}")
    ks = list(ks)
    estimators = estimators or {}
    names = list(scores)
    n_all = valid.sum(axis=1)
    included = n_all > 0
    rows = np.flatnonzero(included)
    tasks, width = int(rows.size), len(ks)
    measured = np.array([tasks > 0 and bool((n_all[rows] >= k).all()) for k in ks])
    cor, cur = correct[rows], valid[rows]
    every = np.ones(valid.shape, bool)

    def cand_of(name: str) -> np.ndarray:
        return np.asarray((candidates or {}).get(name, every), bool)[rows]

    n = n_all[rows]
    c = (cor * cur).sum(axis=1).round().astype(np.int64)
    cov = np.asarray(pass_at_k(n, c, ks)).reshape(tasks, width)

    position = {int(r): i for i, r in enumerate(rows)}

    def selected(name: str) -> np.ndarray | SampledEstimate:
        est = estimators.get(name, "rank")
        cand = cand_of(name)
        mode = majority if est == "majority" else softmax
        prefs = {position[r]: q for r, q in (comparisons or {}).get(name, {}).items() if r in position}
        got = _selected(as_estimator_scores(scores[name][rows], est, cand), cor * cand, cur, ks, est, mode, seed, prefs)
        back = (fallbacks or {}).get(name)
        if back is None or not (back := np.asarray(back, bool)[rows] & ~cand & cur).any():
            return got
        # A subset without a candidate chooses among the flagged ones: over the samples that are not candidates.
        other = cur & ~cand
        alone = _selected(
            as_estimator_scores(scores[name][rows], est, back), cor * back, other, ks, est, mode, seed, prefs
        )
        return _add_fallback(got, alone, n, (cand & cur).sum(axis=1), ks)

    # Independent selectors; a softmax or a vote (the costliest) starts first, not last in the pool.
    order = sorted(names, key=lambda name: estimators.get(name, "rank") not in ("softmax", "majority", "tournament"))
    sel: dict[str, np.ndarray] = {}
    estimated: dict[str, SampledEstimate] = {}
    for name, got in zip(order, mapped(selected, order, tasks * valid.shape[1]), strict=True):
        if isinstance(got, SampledEstimate):
            estimated[name] = got
            got = got.values
        sel[name] = np.asarray(got).reshape(tasks, width)
    sel = {name: sel[name] for name in names}
    per_task_cov = np.full((valid.shape[0], width), np.nan)
    per_task_cov[rows] = np.where(n[:, None] >= np.asarray(ks)[None, :], cov, np.nan)
    nan = np.full(width, np.nan)
    empty = Band(nan, nan, nan)
    out = Curves(ks, tasks, empty, {}, {}, {}, per_task_cov, sel, estimated, measured, included, {}, confidence)
    if tasks == 0:
        for name in names:
            out.selected[name] = out.loss[name] = out.gap[name] = empty
        return out
    return _with_bands(out, np.stack([cov, *(sel[name] for name in names)], axis=1), names, n_boot, seed)


def _with_bands(out: Curves, stacked: np.ndarray, names: list[str], n_boot: int, seed: int) -> Curves:
    """``out`` with coverage's and each selector's bands: ``stacked`` (tasks, 1 + selectors, ks) holds coverage, then
    each selector's selected@k per task; every series is resampled with the same task draws."""
    measured, confidence = out.measured, out.confidence
    stacked[:, :, ~measured] = 0.0
    means = stacked.mean(axis=0)
    boot = bootstrap_means(stacked, n_boot=n_boot, seed=seed)  # (B, 1 + S, K)
    means[:, ~measured], boot[:, :, ~measured] = np.nan, np.nan
    boot_cov, boot_p1 = boot[:, 0], boot[:, 0, :1]
    out.coverage = _band(boot_cov, means[0], confidence)
    out.boot["coverage"] = boot_cov
    with np.errstate(invalid="ignore"):
        for s, name in enumerate(names, start=1):
            out.boot[name] = boot[:, s]
            out.selected[name] = _band(boot[:, s], means[s], confidence)
            out.loss[name] = _band(boot_cov - boot[:, s], means[0] - means[s], confidence)
            gap_mean = np.asarray(gap_recovered(means[s], means[0], means[0, :1]))
            gap_boot = np.asarray(gap_recovered(boot[:, s], boot_cov, boot_p1))
            gap_boot[:, ~measured] = np.nan  # gap_recovered reads "no gap" into NaN
            out.gap[name] = _band(gap_boot, np.where(measured, gap_mean, np.nan), confidence)
    return out

