"""``eval_report.json``: the SWE-bench harness's report, key for key, plus agentbon's verdict per instance.

The summary keys, their meaning and their buckets are those of ``swebench.harness.reporting.make_run_report``
(docs/swebench.md, "agentbon eval"): ``submitted`` = every prediction counted; ``completed`` = graded to a
resolved or unresolved test result; ``empty_patch`` = no patch, not graded; ``error`` = no test result: a patch
that applies no way, a test run past the timeout, a whitespace-only patch, a task that did not load, or what
agentbon could not grade (an infrastructure failure left after retries: the same command retries it);
``incomplete`` = tasks of the suite with no prediction; ``infra_failure`` / ``ambiguous_failure`` and
``failure_reasons`` = the harness's advisory triage (``infra_failure.classify_text``) of the unresolved and error
instances' logs. Entries that are not predictions (bad lines, unknown ids, earlier duplicates) are listed under
``input_errors``, apart from every count. The file is an :class:`EvalReport`, written by :meth:`EvalReport.write`
and read back by :func:`read_eval_report`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentbon.evaluate.match import Matched
from agentbon.evaluate.predictions import InputError
from agentbon.files import write_atomic
from agentbon.report.flags import verdict_flags
from agentbon.report.schema import HarnessReport
from agentbon.store import RunStore
from agentbon.types import Flag, Task, TestOutcome, Verdict

REPORT = "eval_report.json"
Outcome = Literal["resolved", "unresolved", "empty_patch", "error"]
ErrorKind = Literal["", "patch_apply", "timeout", "blank_patch", "task_not_loaded", "undecided", "infra", "not_graded"]
RETRIED: frozenset[str] = frozenset({"infra", "not_graded"})
"""Error kinds that running the same command again grades (the others are final, as in the harness)."""


class InstanceResult(BaseModel):
    """One submitted instance (``EvalReport.instances``, by id): what agentbon's grading said and why."""

    outcome: Outcome
    error: ErrorKind = ""
    """Why an ``error`` instance has no test result ('' for the others)."""
    verdict: str | None = None
    """The grade verdict's status (``pass``/``fail``/``undecided``/``infra_error``); None when not graded."""
    reason: str = ""
    patch_applied: bool | None = None
    timed_out: bool = False
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


def bucket(verdict: Verdict | None) -> tuple[Outcome, ErrorKind]:
    """The harness's bucket of a graded prediction: a test result (resolved or not), or an error and its kind.

    The harness writes a report (``completed``) only when the patch applied and the tests ran to the end; a patch
    that applies no way and a test run past the timeout raise before it, and so are ``error``.
    """
    if verdict is None:
        return "error", "not_graded"
    if verdict.status in ("infra_error", "undecided"):
        return "error", "infra" if verdict.status == "infra_error" else "undecided"
    if not verdict.patch_applied:
        return "error", "patch_apply"
    if verdict.timed_out:
        return "error", "timeout"
    return ("resolved", "") if verdict.status == "pass" else ("unresolved", "")


BLANK = "the patch is whitespace only: no way applies it (the harness: an error instance)"
NOT_GRADED = "not graded (interrupted or stopped before its verification)"


def instance_results(
    grades: dict[str, Verdict], matched: Matched, unloaded: dict[str, str] | None = None
) -> dict[str, InstanceResult]:
    """Every submitted instance's result, by id, read from the run's grade verdicts (by rollout id)."""
    out: dict[str, InstanceResult] = {}
    for tid, p in sorted(matched.submitted.items()):
        if tid in matched.empty:
            out[tid] = InstanceResult(outcome="empty_patch", reason="empty patch: not graded", line=p.line)
        elif tid in matched.blank:
            out[tid] = InstanceResult(outcome="error", error="blank_patch", reason=BLANK, line=p.line)
        elif tid in matched.unloaded:
            why = f"the task did not load: {(unloaded or {}).get(tid, 'see the task errors')}"
            out[tid] = InstanceResult(outcome="error", error="task_not_loaded", reason=why, line=p.line)
        else:
            out[tid] = _graded(tid, p.line, grades.get(f"{tid}/{matched.index}"), matched.index)
    return out


def _graded(tid: str, line: int, v: Verdict | None, index: int = 0) -> InstanceResult:
    outcome, error = bucket(v)
    base = InstanceResult(outcome=outcome, error=error, line=line, rollout_id=f"{tid}/{index}")
    if v is None:
        return base.model_copy(update={"reason": NOT_GRADED})
    return base.model_copy(
        update=dict(
            verdict=v.status, reason=v.reason, patch_applied=v.patch_applied, timed_out=v.timed_out,
            tampered=v.tampered, flags=verdict_flags(v), tests=v.tests, patch_hash=v.patch_hash, duration_s=v.duration_s,
        )
    )  # fmt: skip


def triage(results: dict[str, InstanceResult], grades: dict[str, Verdict]) -> dict[str, tuple[str, str]]:
    """The harness's advisory triage (reason, tier) of each unresolved or error instance that has a log.

    The harness classifies its test output and instance log; agentbon the log its verdict keeps (the tail of the
    test output, with the harness's timeout line; the apply attempts' output) and, for what it could not grade,
    the reason."""
    from agentbon.verify.harness import triage as classify

    out = {}
    for tid, r in results.items():
        v = grades.get(r.rollout_id)
        if r.outcome not in ("unresolved", "error") or v is None:
            continue
        found = classify(v.log + (f"\n{v.reason}" if r.error in ("infra", "undecided") else ""))
        if found:
            out[tid] = found
    return out


def flagged_ids(results: dict[str, InstanceResult]) -> dict[str, list[str]]:
    """Flag kind → instances whose grading flagged it (kinds never seen are left out)."""
    out: dict[str, list[str]] = {}
    for tid, r in sorted(results.items()):
        for kind in dict.fromkeys(f.kind for f in r.flags):
            out.setdefault(kind, []).append(tid)
    return out


GRADER = "agentbon"
READS = (2,)
"""The harness's ``schema_version`` values :func:`read_eval_report` reads (every agentbon eval report has had 2)."""
TRIAGE_AFTER = {
    "unresolved_instances": ("infra_failure_instances", "ambiguous_failure_instances"),
    "unresolved_ids": ("infra_failure_ids", "ambiguous_failure_ids", "failure_reasons"),
}
"""The harness's triage keys, each after the key it follows in ``make_run_report``."""


class EvalReport(HarnessReport):
    """``eval_report.json``: the harness's keys (its triage keys among them), then agentbon's own. Keys that older
    agentbon versions did not write read back empty."""

    model_config = ConfigDict(frozen=True)

    infra_failure_instances: int = 0
    ambiguous_failure_instances: int = 0
    infra_failure_ids: list[str] = Field(default_factory=list)
    ambiguous_failure_ids: list[str] = Field(default_factory=list)
    failure_reasons: dict[str, str] = Field(default_factory=dict)
    run_id: str
    model_name_or_path: str
    predictions: str
    """The predictions file."""
    grader: str = GRADER
    retry_ids: list[str] = Field(default_factory=list)
    """Instances whose error the same command grades when run again (``RETRIED``)."""
    flagged_ids: dict[str, list[str]] = Field(default_factory=dict)
    input_errors: list[InputError] = Field(default_factory=list)
    instances: dict[str, InstanceResult] = Field(default_factory=dict)

    def to_json(self) -> str:
        """The file's text: the harness's keys in its order (``TRIAGE_AFTER``), then agentbon's."""
        data = self.model_dump(mode="json")
        head = {}
        for key in HarnessReport.model_fields:
            head[key] = data.pop(key)
            head.update({after: data.pop(after) for after in TRIAGE_AFTER.get(key, ())})
        return json.dumps({**head, **data}, indent=2) + "\n"

    def write(self, path: Path) -> Path:
        """Write the file at ``path`` (its folder made where missing); return ``path``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_atomic(path, self.to_json())


def read_eval_report(path: str | Path) -> EvalReport:
    """Read an ``eval_report.json`` back; a file that is not agentbon's (the harness's own report) says so."""
    from agentbon.errors import ConfigError

    data = json.loads(Path(path).read_text())
    grader, version = data.get("grader"), data.get("schema_version")
    if grader != GRADER or version not in READS:
        raise ConfigError(
            f"{path}: not an agentbon eval report (grader {grader!r}, schema_version {version!r}); this agentbon "
            f"reads grader {GRADER!r}, schema_version {', '.join(map(str, READS))}: grade again with `agentbon eval`"
        )
    return EvalReport.model_validate(data)


def build_eval_report(
    store: RunStore, matched: Matched, tasks: list[Task], input_errors: list[InputError], predictions_file: str,
    unloaded: dict[str, str] | None = None,
) -> EvalReport:
    """The report of ``matched``'s predictions, from the store's grade verdicts.

    ``unloaded``: the suite's records that did not load (id → why): part of the dataset, as for the harness.
    """
    grades = store.verdicts("grade") if store.path.exists() else {}
    results = instance_results(grades, matched, unloaded)
    triaged = triage(results, grades)
    tiers = {tier: sorted(t for t, (_, tr) in triaged.items() if tr == tier) for tier in ("environment", "ambiguous")}
    dataset = {t.task_id for t in tasks} | set(unloaded or {})
    keys = HarnessReport.of(dataset, list(results), {tid: r.outcome for tid, r in results.items()})
    return EvalReport(
        **keys.model_dump(), infra_failure_instances=len(tiers["environment"]),
        ambiguous_failure_instances=len(tiers["ambiguous"]), infra_failure_ids=tiers["environment"],
        ambiguous_failure_ids=tiers["ambiguous"],
        failure_reasons={tid: reason for tid, (reason, _) in sorted(triaged.items())},
        run_id=store.run_id, model_name_or_path=matched.model, predictions=predictions_file,
        retry_ids=sorted(tid for tid, r in results.items() if r.error in RETRIED), flagged_ids=flagged_ids(results),
        input_errors=input_errors, instances=results,
    )  # fmt: skip
