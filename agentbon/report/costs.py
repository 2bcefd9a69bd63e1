"""The cost section of the summary: what the rollouts and the selection cost, and what a point costs."""

from __future__ import annotations

import math

import numpy as np

from agentbon.config import ReportConfig
from agentbon.metrics import (
    break_even,
    cost_at_k,
    cost_per_extra_point,
    cost_per_solved,
    cost_summary,
    doubling_ks,
    kl_bound,
)
from agentbon.metrics.tournament import pair_tokens_at_k
from agentbon.report.compute import Curves
from agentbon.report.data import RunData
from agentbon.report.schema import BreakEven, Cost, CostUnit, SelectorCost, Theory


def _num(x: float) -> float | None:
    """JSON has no infinity: unbounded or undefined figures become null."""
    return float(f"{x:.10g}") if math.isfinite(x) else None


def cost_section(data: RunData, curves: Curves, options: ReportConfig) -> Cost:
    """Token, sandbox and latency totals; sample and scoring cost; cost per solved task and per extra point."""
    rollouts = list(data.rollouts.values())
    row = {t: i for i, t in enumerate(data.task_ids)}
    arr = {
        "task": np.array([row[r.task_id] for r in rollouts], dtype=np.int64),
        "prompt": np.array([r.usage.prompt_tokens for r in rollouts], dtype=np.int64),
        "completion": np.array([r.usage.completion_tokens for r in rollouts], dtype=np.int64),
        "cached": np.array([r.usage.cached_tokens for r in rollouts], dtype=np.int64),
        "sandbox": np.array([r.timings.sandbox_s for r in rollouts]),
        "wall": np.array([r.timings.wall_s for r in rollouts]),
    }
    s = cost_summary(arr["task"], arr["prompt"], arr["completion"], arr["cached"], arr["sandbox"], arr["wall"],
                     tasks=len(data.task_ids))  # fmt: skip
    verify_s = sum(v.duration_s for v in data.evidence.values())
    grade_s = sum(v.duration_s for v in data.grades.values())
    count = max(1, s.rollouts)
    prompt_price, completion_price = options.usd_per_mtok_prompt, options.usd_per_mtok_completion
    unit: CostUnit
    if prompt_price is not None and completion_price is not None:
        unit = "usd"
        cached_price = options.usd_per_mtok_cached if options.usd_per_mtok_cached is not None else prompt_price
        tokens_usd = (
            (s.prompt_tokens - s.cached_tokens) * prompt_price
            + s.cached_tokens * cached_price
            + s.completion_tokens * completion_price
        ) / 1e6
        sample_cost = (tokens_usd + s.sandbox_s / 3600 * options.usd_per_sandbox_hour) / count
        scoring_cost = verify_s / 3600 * options.usd_per_sandbox_hour / max(1, len(data.evidence))
    else:
        # Unpriced: count tokens; verification is sandbox time, not tokens, so it is reported apart.
        unit, sample_cost, scoring_cost = "tokens", s.total_tokens / count, 0.0
    # A cost and the accuracy it buys over the same tasks (those in the curves) and at the same k.
    costs = cost_at_k(curves.ks, curves.tasks, sample_cost, scoring_cost)
    measured = np.flatnonzero(curves.measured)
    at = int(measured[-1]) if measured.size else None  # the largest k every task in the curves has samples for
    return Cost(
        rollouts=s.rollouts,
        prompt_tokens=s.prompt_tokens,
        completion_tokens=s.completion_tokens,
        cached_tokens=s.cached_tokens,
        total_tokens=s.total_tokens,
        sandbox_s=round(s.sandbox_s, 3),
        verify_evidence_s=round(verify_s, 3),
        verify_grade_s=round(grade_s, 3),
        rollout_wall_p50_s=round(s.wall_p50_s, 3),
        rollout_wall_p99_s=round(s.wall_p99_s, 3),
        critical_path_p50_s=round(s.critical_path_p50_s, 3),
        critical_path_p99_s=round(s.critical_path_p99_s, 3),
        critical_path_max_s=round(s.critical_path_max_s, 3),
        unit=unit,
        sample_cost=_num(sample_cost),
        scoring_cost=_num(scoring_cost),
        cost_at_k=[_num(c) for c in costs],
        cost_tasks=curves.tasks,
        per_solved_k=curves.ks[at] if at is not None else None,
        coverage_per_extra_point=[_num(c) for c in cost_per_extra_point(curves.ks, curves.coverage.mean, costs)],
        selectors={name: _selector_cost(band.mean, costs, at, curves, _judge_tokens(data, name, curves))
                   for name, band in curves.selected.items()},
    )  # fmt: skip


def _judge_tokens(data: RunData, name: str, curves: Curves) -> list[float] | None:
    """A tournament's tokens on a k-subset per task, over the tasks in the curves (None where it recorded none)."""
    pairs = data.pair_tokens.get(name)
    if pairs is None:
        return None
    rows = np.flatnonzero(curves.included)
    position = {int(r): i for i, r in enumerate(rows)}
    mine = {position[r]: t for r, t in pairs.items() if r in position}
    return [round(float(x), 3) for x in pair_tokens_at_k(mine, data.curve[rows], curves.ks)]


def _selector_cost(
    mean: np.ndarray, costs: np.ndarray, at: int | None, curves: Curves, judge_tokens: list[float] | None = None
) -> SelectorCost:
    """A selector's cost per task it solved at the largest measured k (``at``), and per extra point each doubling;
    ``judge_tokens``: what its judge spends on a k-subset, where it recorded that."""
    return SelectorCost(
        per_solved_task=None if at is None else _num(cost_per_solved(float(costs[at]), float(mean[at]) * curves.tasks)),
        per_extra_point=[_num(c) for c in cost_per_extra_point(curves.ks, mean, costs)],
        judge_tokens=judge_tokens,
    )


def theory_section(
    n: int, sample_cost: float | None, scoring_cost: float | None, options: ReportConfig, unit: CostUnit
) -> Theory:
    """KL(BoN‖base) bound per k and the best-of-N versus RL break-even at N."""
    ks = doubling_ks(n) if n >= 1 else []
    be = break_even(options.rl_training_cost or 0.0, max(n, 1), sample_cost or 0.0, scoring_cost or 0.0)
    return Theory(
        kl_bound_nats={str(k): round(float(kl_bound(k)), 6) for k in ks},
        break_even=BreakEven(
            n=be.n,
            unit=unit,
            extra_cost_per_request=_num(be.extra_cost_per_request),
            training_cost=options.rl_training_cost,
            requests=_num(be.requests) if options.rl_training_cost is not None else None,
        ),
    )
