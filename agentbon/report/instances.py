"""SWE-bench harness report keys (schema_version 2), for the selected candidates and for every rollout.

Bucket rules follow the harness: a prediction is *submitted*; an empty patch is *empty_patch*
(submitted, never evaluated); an evaluation that errored is *error*; an evaluated one is *completed*
and either *resolved* or *unresolved*; anything not evaluated yet is *incomplete*. Here a task whose
rollouts all hit infrastructure errors (no valid sample) is an error as well, never a model failure.
"""

from __future__ import annotations

from agentbon.report.data import RunData
from agentbon.report.schema import Bucket, HarnessReport
from agentbon.types import Rollout, Verdict


def _bucket(rollout: Rollout | None, grade: Verdict | None) -> Bucket:
    if rollout is None or rollout.status == "cancelled":
        return "incomplete"
    if rollout.status == "infra_error":
        return "error"
    if not rollout.patch.strip():
        return "empty_patch"
    if grade is None:
        return "incomplete"
    return "resolved" if grade.status == "pass" else "unresolved" if grade.status == "fail" else "error"


def winner_report(data: RunData, selector: str | None) -> HarnessReport:
    """The harness's report over tasks for ``selector``'s winners (the predictions file it would grade)."""
    buckets: dict[str, Bucket] = {}
    submitted: list[str] = []
    chosen = data.selections.get(selector or "", {})
    for i, task_id in enumerate(data.task_ids):
        winner = chosen.get(task_id)
        rollout = data.rollouts.get(winner.winner) if winner and winner.winner else None
        if rollout is not None:
            submitted.append(task_id)
            buckets[task_id] = _bucket(rollout, data.grades.get(rollout.rollout_id))
        elif data.present[i].any() and not data.valid[i].any():
            buckets[task_id] = "error"  # every rollout failed on infrastructure: nothing to submit
    return HarnessReport.of(data.task_ids, submitted, buckets)  # the others: incomplete


def rollout_report(data: RunData) -> HarnessReport:
    """The same keys over rollout ids: infra_error rollouts are errors, not failures."""
    buckets = {rid: _bucket(r, data.grades.get(rid)) for rid, r in data.rollouts.items()}
    return HarnessReport.of(list(buckets), [rid for rid, r in data.rollouts.items() if r.finished], buckets)
