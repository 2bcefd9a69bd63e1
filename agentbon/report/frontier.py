"""Staged verification, replayed from the run: selected accuracy against what verification cost, per policy.

A run verifies every candidate with the evidence tests and then selects. A staged policy spends less: the
critic ranks a task's candidates (cheap: no container), and only its top ``m`` go through the evidence tests; the
winner is the best of those by evidence, then critic. The cheap filters come first in every policy, and cost no
test run: a candidate whose patch is empty or does not apply, or that a blocking flag marks, is not a candidate
(``RunData.candidate``). The policies replayed, each over the run's own records (no extra compute):

- ``tests on all, then critic`` (the run's ``tests-then-critic``): every candidate tested;
- ``critic, tests on top m`` for m = 1, 2, 4, ... below the task's candidates;
- ``critic alone``: no test run at all.

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


def _choose(critic: np.ndarray, tested: np.ndarray, passed: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Per task, the chosen cell's column (-1 where none): among tested candidates an evidence pass first, then the
    critic; where none is tested, the critic's top."""
    key = np.where(cells, critic, -np.inf)
    bonus = np.where(tested & passed & cells, 2.0, 0.0) + np.where(tested & cells, 1.0, 0.0)
    chosen = np.argmax(np.where(cells, bonus * 10.0 + key, -np.inf), axis=1)
    return np.where(cells.any(axis=1), chosen, -1)


def frontier_section(data: RunData) -> dict[str, Any] | None:
    """The ``frontier`` part of ``summary.json``; None without recorded critic scores or graded candidates."""
    critic = data.scores.get("critic")
    cells = data.valid & data.candidate
    if critic is None or not cells.any():
        return None
    critic = np.where(cells & np.isfinite(critic), critic, -np.inf)
    passed, seconds, correct = data.evidence_pass, np.where(cells, data.evidence_s, 0.0), data.correct > 0
    tasks = len(data.task_ids)
    rows = np.arange(tasks)
    # Each candidate's rank by the critic within its task (0 = top), ties by index.
    order = np.argsort(-critic, axis=1, kind="stable")
    rank = np.empty_like(order)
    rank[rows[:, None], order] = np.arange(order.shape[1])[None, :]
    most = int(cells.sum(axis=1).max())
    policies: list[tuple[str, int | None]] = [("tests on all, then critic", None)]
    m = 1
    while m < most:
        policies.append((f"critic, tests on top {m}", m))
        m *= 2
    policies.append(("critic alone", 0))
    full_cost = float(seconds.sum())
    out: list[dict[str, Any]] = []
    for name, top in policies:
        tested = cells if top is None else cells & (rank < top)
        chosen = _choose(critic, tested, passed, cells)
        solved = np.where(chosen >= 0, correct[rows, np.maximum(chosen, 0)], False)
        cost = float(seconds[tested].sum())
        out.append({
            "policy": name, "tested": int(tested.sum()), "container_s": round(cost, 3),
            "accuracy": round(float(solved.sum()) / tasks, 6) if tasks else 0.0,
            "throughput": round(full_cost / cost, 3) if cost > 0 else None,
        })  # fmt: skip
    base = out[0]["accuracy"]
    for row in out:
        row["accuracy_drop_points"] = round(100 * (base - row["accuracy"]), 3)
    critic_name = ((data.config.get("select") or {}).get("critic")) or "classifier"
    return {
        "policies": out,
        "critic": critic_name,
        "critic_tokens": "unknown" if critic_name == "judge" else 0,
        "anchor": ANCHOR,
    }
