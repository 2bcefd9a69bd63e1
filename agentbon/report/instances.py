"""SWE-bench harness report keys (schema_version 2), for the selected candidates and for every rollout.

Bucket rules follow the harness: a prediction is *submitted*; an empty patch is *empty_patch*
(submitted, never evaluated); an evaluation that errored is *error*; an evaluated one is *completed*
and either *resolved* or *unresolved*; anything not evaluated yet is *incomplete*. Here a task whose
rollouts all hit infrastructure errors (no valid sample) is an error as well, never a model failure.
"""

from __future__ import annotations

from agentbon.report.data import RunData
from agentbon.types import Rollout, Verdict

SWEBENCH_SCHEMA_VERSION = 2


def _bucket(rollout: Rollout | None, grade: Verdict | None) -> str:
    if rollout is None or rollout.status == "cancelled":
        return "incomplete"
    if rollout.status == "infra_error":
        return "error"
    if not rollout.patch.strip():
        return "empty_patch"
    if grade is None:
        return "incomplete"
    return {"pass": "resolved", "fail": "unresolved"}.get(grade.status, "error")


def _report(total: list[str], submitted: list[str], buckets: dict[str, str]) -> dict:
    ids: dict[str, list[str]] = {b: [] for b in ("resolved", "unresolved", "empty_patch", "error", "incomplete")}
    for key, bucket in buckets.items():
        ids[bucket].append(key)
    completed = ids["resolved"] + ids["unresolved"]
    return {
        "total_instances": len(total),
        "submitted_instances": len(submitted),
        "completed_instances": len(completed),
        "resolved_instances": len(ids["resolved"]),
        "unresolved_instances": len(ids["unresolved"]),
        "empty_patch_instances": len(ids["empty_patch"]),
        "error_instances": len(ids["error"]),
        "completed_ids": sorted(completed),
        "incomplete_ids": sorted(ids["incomplete"]),
        "empty_patch_ids": sorted(ids["empty_patch"]),
        "submitted_ids": sorted(submitted),
        "resolved_ids": sorted(ids["resolved"]),
        "unresolved_ids": sorted(ids["unresolved"]),
        "error_ids": sorted(ids["error"]),
        "schema_version": SWEBENCH_SCHEMA_VERSION,
    }


def winner_report(data: RunData, selector: str | None) -> dict:
    """The harness's report over tasks for ``selector``'s winners (the predictions file it would grade)."""
    buckets: dict[str, str] = {}
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
        else:
            buckets[task_id] = "incomplete"
    return _report(data.task_ids, submitted, buckets)


def rollout_report(data: RunData) -> dict:
    """The same keys over rollout ids: infra_error rollouts are errors, not failures."""
    buckets = {rid: _bucket(r, data.grades.get(rid)) for rid, r in data.rollouts.items()}
    total = sorted(buckets)
    submitted = [rid for rid in total if data.rollouts[rid].finished]
    return _report(total, submitted, buckets)
