"""Staged verification, replayed from the run: selected accuracy against what verification cost, per policy.

A run verifies every candidate with the evidence tests and then selects. A staged policy spends less: the
critic ranks a task's candidates (cheap: no container), and only its top ``m`` go through the evidence tests; the
winner is the best of those by evidence, then critic. The cheap filters come first in every policy, and cost no
test run: a candidate whose patch is empty or does not apply, or that a blocking flag marks, is not a candidate
(``RunData.candidate``). The policies replayed, each over the run's own records (no extra compute):

- ``tests on all, then critic`` (the run's ``tests-then-critic``): every candidate tested;
- ``critic, tests on top m`` for m = 1, 2, 4, ... below the task's candidates;
- ``critic alone``: no test run at all;
- where the run's verdicts recorded the parse stage (``Verdict.parses``), each of these again after it: a task's
  candidates whose Python files do not all compile are dropped before the critic ranks (where that would drop
  them all, none is). The check shares the apply's engine call, so it is counted as free.

Selected accuracy is the share of the run's tasks whose chosen candidate passed the grade (no candidate: not
solved). Verification cost is the evidence tests' container-seconds as recorded (a candidate whose verdict was
shared with an identical patch's cost nothing; where only the copy falls in the top m, that undercounts) and, for
a critic that calls a model, its tokens (not recorded per candidate: shown as unknown). "Throughput" is the
all-tests cost over the policy's cost: how many more candidates the same verification budget would check.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentbon.report.data import RunData

ANCHOR = {
    "throughput": 11.6,
    "accuracy_drop_pct": 8.3,
    "what": "staged verification with outcome reward models against full test-suite verification, as reported on "
    "Python code benchmarks",
}
"""The figure issue readers compare with: 11.6x the throughput for 8.3 % less accuracy."""


def frontier_section(data: RunData) -> dict[str, Any] | None:
    """The ``frontier`` part of ``summary.json``; None without recorded critic scores or graded candidates."""
    critic = data.scores.get("critic")
    cells = data.valid & data.candidate
    if critic is None or not cells.any():
        return None
    out = _policies(data, critic, cells, "")
    unparsed = cells & data.unparsed if data.parse_checked else np.zeros_like(cells)
    if data.parse_checked:  # the parse stage first: the candidates whose Python files all compile
        kept = cells & ~unparsed
        emptied = ~kept.any(axis=1)  # a filter narrows a task's candidates, never empties them: all go on
        kept[emptied] = cells[emptied]
        out += _policies(data, critic, kept, "parses, then ")
    full_cost = out[0]["throughput"]
    for row in out:
        row["throughput"] = round(full_cost / row["throughput"], 3) if row["throughput"] > 0 else None
    base = out[0]["accuracy"]
    for row in out:
        row["accuracy_drop_points"] = round(100 * (base - row["accuracy"]), 3)
    from agentbon.report.calibration import run_critic

    critic_name = run_critic(data.config, data.path)[0]
    return {
        "policies": out,
        "critic": critic_name,
        "critic_tokens": "unknown" if critic_name == "llm-judge" else 0,
        "anchor": ANCHOR,
        "parse_stage": data.parse_checked,
        "unparsed": int(unparsed.sum()),
        "candidates": int(cells.sum()),
    }


def _policies(data: RunData, critic: np.ndarray, cells: np.ndarray, prefix: str) -> list[dict[str, Any]]:
    """Every policy over the candidates in ``cells``: all tested, the critic's top m tested, the critic alone
    (``throughput`` holds the cost until the caller turns it into a ratio)."""
    critic = np.where(cells & np.isfinite(critic), critic, -np.inf)
    tasks = len(data.task_ids)
    rows = np.arange(tasks)[:, None]
    # Each task's candidates in the critic's order (ties by index; non-candidates last): the policies are prefixes.
    order = np.argsort(-critic, axis=1, kind="stable")
    ranked = cells[rows, order]
    passing = ranked & data.evidence_pass[rows, order]
    spent = np.cumsum(np.where(ranked, data.evidence_s[rows, order], 0.0), axis=1)
    right = (data.correct > 0)[rows, order]
    counts = ranked.sum(axis=1)
    first_pass = np.where(passing.any(axis=1), np.argmax(passing, axis=1), order.shape[1])
    most = int(counts.max())
    policies: list[tuple[str, int]] = [(f"{prefix}tests on all, then critic", most)]
    m = 1
    while m < most:
        policies.append((f"{prefix}critic, tests on top {m}", m))
        m *= 2
    policies.append((f"{prefix}critic alone", 0))
    out: list[dict[str, Any]] = []
    for name, top in policies:
        # The best tested candidate by evidence, then critic: the first evidence pass within the top m, else the
        # critic's first (a task without candidates: none).
        chosen = np.where(first_pass < top, first_pass, 0)
        solved = (counts > 0) & right[np.arange(tasks), chosen]
        cost = float(spent[:, top - 1].sum()) if top else 0.0
        out.append({
            "policy": name, "tested": int(np.minimum(counts, top).sum()), "container_s": round(cost, 3),
            "accuracy": round(float(solved.sum()) / tasks, 6) if tasks else 0.0, "throughput": cost,
        })  # fmt: skip
    return out
