"""``eval_report.json``: the SWE-bench harness's summary shape, plus agentbon's verdict per instance.

Summary keys and their meaning are those of ``swebench.harness.reporting.make_run_report``: ``submitted``
= every valid prediction; ``completed`` = graded (resolved or not: a patch that does not apply is a graded
failure, as in the harness); ``empty_patch`` = not graded; ``error`` = could not be graded (an infrastructure
failure left after retries, or a task whose tests cannot decide), run the same command again to retry;
``incomplete`` = tasks of the suite with no prediction. Entries that are not predictions (bad lines, unknown
or duplicate ids) are listed under ``input_errors``, apart from every count.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from agentbon.evaluate.match import Matched
from agentbon.evaluate.predictions import InputError
from agentbon.store import RunStore
from agentbon.types import Flag, Task, TestOutcome, Verdict

REPORT = "eval_report.json"
Outcome = Literal["resolved", "unresolved", "empty_patch", "error"]


class InstanceResult(BaseModel):
    """One submitted instance: what agentbon's grading said and why."""

    instance_id: str
    outcome: Outcome
    verdict: str | None = None
    """The grade verdict's status (``pass``/``fail``/``undecided``/``infra_error``); None when not graded."""
    reason: str = ""
    patch_applied: bool | None = None
    tampered: list[str] = Field(default_factory=list)
    """Test, conftest or runner-config files the patch touched (undone before grading): a flag to look at."""
    flags: list[Flag] = Field(default_factory=list)
    """Everything the grading flagged (kind, detail, paths; docs/security.md, Flags); a non-empty ``tampered``
    comes with a ``tampered`` flag."""
    tests: dict[str, TestOutcome] = Field(default_factory=dict)
    patch_hash: str = ""
    duration_s: float = 0.0
    rollout_id: str = ""
    line: int = 0
    """The prediction's line in the predictions file."""


def outcome_of(verdict: Verdict | None) -> Outcome:
    """``resolved`` / ``unresolved`` from a pass / fail grade; ``error`` for anything that did not decide."""
    if verdict is None or verdict.status in ("infra_error", "undecided"):
        return "error"
    return "resolved" if verdict.status == "pass" else "unresolved"


def flags_of(verdict: Verdict) -> list[Flag]:
    """The verdict's flags, with a ``tampered`` flag for a legacy ``tampered`` list that has none."""
    flags = list(verdict.flags)
    if verdict.tampered and not any(f.kind == "tampered" for f in flags):
        flags.append(Flag(kind="tampered", detail="touched protected files", paths=list(verdict.tampered)))
    return flags


def instance_results(store: RunStore, matched: Matched) -> dict[str, InstanceResult]:
    """Every submitted instance's result, by id, read from the store's grade verdicts."""
    grades = store.verdicts("grade") if store.path.exists() else {}
    out: dict[str, InstanceResult] = {}
    for tid, p in sorted(matched.submitted.items()):
        if tid in matched.empty:
            out[tid] = InstanceResult(
                instance_id=tid, outcome="empty_patch", reason="empty patch: not graded", line=p.line
            )
            continue
        v = grades.get(f"{tid}/0")
        out[tid] = InstanceResult(
            instance_id=tid,
            outcome=outcome_of(v),
            line=p.line,
            rollout_id=f"{tid}/0",
            **(
                dict(
                    verdict=v.status,
                    reason=v.reason,
                    patch_applied=v.patch_applied,
                    tampered=v.tampered,
                    flags=flags_of(v),
                    tests=v.tests,
                    patch_hash=v.patch_hash,
                    duration_s=v.duration_s,
                )
                if v is not None
                else dict(reason="not graded (interrupted or stopped before its verification)")
            ),
        )
    return out


def flagged_ids(results: dict[str, InstanceResult]) -> dict[str, list[str]]:
    """Flag kind → instances whose grading flagged it (kinds never seen are left out)."""
    out: dict[str, list[str]] = {}
    for tid, r in sorted(results.items()):
        for kind in dict.fromkeys(f.kind for f in r.flags):
            out.setdefault(kind, []).append(tid)
    return out


def build_report(
    store: RunStore, matched: Matched, tasks: list[Task], input_errors: list[InputError], predictions_file: str
) -> dict[str, Any]:
    """The report as a dict: harness summary keys first, then agentbon's own."""
    results = instance_results(store, matched)
    ids: dict[Outcome, list[str]] = {"resolved": [], "unresolved": [], "empty_patch": [], "error": []}
    for tid, r in results.items():
        ids[r.outcome].append(tid)
    completed = sorted(ids["resolved"] + ids["unresolved"])
    incomplete = sorted({t.task_id for t in tasks} - set(results))
    return {
        "total_instances": len(tasks),
        "submitted_instances": len(results),
        "completed_instances": len(completed),
        "resolved_instances": len(ids["resolved"]),
        "unresolved_instances": len(ids["unresolved"]),
        "empty_patch_instances": len(ids["empty_patch"]),
        "error_instances": len(ids["error"]),
        "completed_ids": completed,
        "incomplete_ids": incomplete,
        "empty_patch_ids": sorted(ids["empty_patch"]),
        "submitted_ids": sorted(results),
        "resolved_ids": sorted(ids["resolved"]),
        "unresolved_ids": sorted(ids["unresolved"]),
        "error_ids": sorted(ids["error"]),
        "failure_reasons": {tid: results[tid].reason for tid in sorted(ids["error"])},
        "flagged_ids": flagged_ids(results),
        "schema_version": 2,
        "run_id": store.run_id,
        "model_name_or_path": matched.model,
        "predictions": predictions_file,
        "grader": "agentbon",
        "input_errors": [e.model_dump(mode="json") for e in input_errors],
        "instances": {tid: r.model_dump(mode="json", exclude={"instance_id"}) for tid, r in results.items()},
    }


def write_report(store: RunStore, report: dict[str, Any]) -> Path:
    """Write ``eval_report.json`` in the run directory; return its path."""
    store.path.mkdir(parents=True, exist_ok=True)
    path = store.path / REPORT
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    tmp.replace(path)
    return path
