"""Task validation: the gold patch resolves, the empty patch does not, and every grading test is stable.

For each task, in fresh sandboxes: the gold patch and the empty patch are each graded ``runs`` times
(a test whose outcome differs between runs of the same patch is flaky), FAIL_TO_PASS tests must fail
and PASS_TO_PASS tests pass at base, and the gold patch must pass the evidence tests (else the
evidence would reject a correct fix). Tests the loader left out of the evidence (they exist only once the
grade's test patch is applied) are listed with why, and do not make a task invalid. Nor do flaky tests by
themselves: ``agentbon tasks validate`` keeps them in the suite's flaky map (``flaky.json``), which grading reads
(verify/flaky.py). Validation itself grades strictly (``verify.flaky: strict``, one run decides), so that it sees
each run's own outcomes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import Field

from agentbon.protocols import Verifier
from agentbon.types import Record, Rollout, Task, Verdict


class TaskValidation(Record):
    """What validating one task found."""

    task_id: str
    source: str = ""
    status: str = "valid"
    """``valid``, ``invalid``, or ``infra_error`` (could not be checked)."""
    gold: str = ""
    """How many grade runs the gold patch resolved, e.g. ``3/3``."""
    empty: str = ""
    """How many grade runs the empty patch resolved (``0/3`` for a valid task)."""
    evidence: str = ""
    """Gold patch on the evidence tests (``undecided`` when there are none)."""
    flaky: list[str] = Field(default_factory=list)
    seen: dict[str, str] = Field(default_factory=dict)
    """Per flaky test, its outcomes run by run (what the suite's flaky map records)."""
    problems: list[str] = Field(default_factory=list)
    evidence_left_out: dict[str, str] = Field(default_factory=dict)
    """Tests of the task's lists that are not selection evidence, each with why (they exist only once the grade's
    test patch is applied); the task stays valid, its selection just has fewer tests to go on."""


def _rollout(task: Task, index: int, patch: str) -> Rollout:
    return Rollout(run_id="validate", task_id=task.task_id, index=index, status="submitted", patch=patch)


def _resolved(verdicts: list[Verdict]) -> str:
    infra = sum(v.status == "infra_error" for v in verdicts)
    return f"{sum(v.status == 'pass' for v in verdicts)}/{len(verdicts)}" + (f" ({infra} infra)" if infra else "")


def outcomes_seen(test: str, **runs: list[Verdict]) -> str:
    """One test's outcomes run by run, per patch: ``gold passed, failed, passed; empty failed, failed, failed``."""
    parts = [f"{name} " + ", ".join(v.tests.get(test, "missing") for v in vs) for name, vs in runs.items() if vs]
    return "; ".join(parts)


def flaky_tests(verdicts: list[Verdict]) -> list[str]:
    """Tests whose outcome is not the same in every verdict (runs of one patch)."""
    ids = sorted({t for v in verdicts for t in v.tests})
    return [t for t in ids if len({v.tests.get(t, "missing") for v in verdicts}) > 1]


FLAKY_NOTE = (
    "{} flaky test(s), kept in the suite's flaky map: grading decides them by verify.flaky (k of m runs by default)"
)


def _only_flaky(task: Task, verdict: Verdict, flaky: list[str]) -> bool:
    """True when a failed verdict failed on flaky tests alone (its outcomes decided it, and only flaky ones failed)."""
    if not flaky or not verdict.tests or not verdict.patch_applied:
        return False
    bad = [t for t in task.grade.tests if verdict.tests.get(t) != "passed"]
    return bool(bad) and all(t in flaky for t in bad) and verdict.reason.startswith(("FAIL_TO_PASS", "PASS_TO_PASS"))


def base_problems(task: Task, base: Mapping[str, str], flaky: Sequence[str] = ()) -> list[str]:
    """What the outcomes at the base (the empty patch) say against the task's lists (a flaky PASS_TO_PASS test
    failing at base is the flaky map's business, not a problem)."""
    passing_f2p = [t for t in task.grade.fail_to_pass if base.get(t) == "passed"]
    failing_p2p = [t for t in task.grade.pass_to_pass if base.get(t) not in (None, "passed") and t not in flaky]
    out = []
    if passing_f2p:
        out.append(f"FAIL_TO_PASS tests pass at base: {', '.join(passing_f2p[:3])}")
    if failing_p2p:
        out.append(f"PASS_TO_PASS tests fail at base: {', '.join(failing_p2p[:3])}")
    return out


def validate_task(task: Task, verifier: Verifier, runs: int = 3) -> TaskValidation:
    """Check one task (the verifier must not share verdicts between identical patches)."""
    out = TaskValidation(task_id=task.task_id, source=task.source)
    problems: list[str] = []
    if not task.gold_patch and task.kind != "migration":
        return out.model_copy(update={"status": "invalid", "problems": ["no gold patch"]})
    if not task.gold_patch:  # a migration written from a repository list: nobody has done it yet
        return _without_gold(task, verifier, runs, out)
    gold = [verifier.verify(task, _rollout(task, i, task.gold_patch), "grade") for i in range(runs)]
    empty = [verifier.verify(task, _rollout(task, runs + i, ""), "grade") for i in range(runs)]
    evidence = verifier.verify(task, _rollout(task, 2 * runs, task.gold_patch), "evidence")
    every = [*gold, *empty, evidence]
    infra = [v.reason for v in every if v.status == "infra_error"]
    flaky = sorted(set(flaky_tests(gold)) | set(flaky_tests(empty)))
    if any(not v.patch_applied for v in gold):
        problems.append("gold patch does not apply")
    elif any(v.status not in ("pass", "infra_error") and not _only_flaky(task, v, flaky) for v in gold):
        bad = next(v for v in gold if v.status not in ("pass", "infra_error") and not _only_flaky(task, v, flaky))
        problems.append(f"gold patch does not resolve: {bad.reason}")
    if any(v.status == "pass" for v in empty):
        problems.append("the empty patch resolves the task")
    problems += base_problems(task, empty[0].tests, flaky)
    if evidence.status == "fail":
        absent = [t for t, outcome in evidence.tests.items() if outcome == "missing"]
        hint = f" ({len(absent)} not found before the test patch: {', '.join(absent[:3])})" if absent else ""
        problems.append(f"gold patch fails the evidence tests: {evidence.reason}{hint}")
    status = "invalid" if problems else ("infra_error" if infra else "valid")
    if infra:
        problems.append(f"infra errors: {infra[0]}")
    if flaky:  # a note: the suite's flaky map carries them into grading (verify.flaky)
        problems.append(FLAKY_NOTE.format(len(flaky)))
    left_out = task.evidence.left_out
    if left_out:  # a note, not a problem: shown beside the problems, the status stays as decided above
        first = next(iter(left_out.items()))
        more = f" (+{len(left_out) - 1} more)" if len(left_out) > 1 else ""
        problems.append(f"evidence: {len(left_out)} test(s) left out: {first[0]}: {first[1]}{more}")
    return out.model_copy(
        update={
            "status": status,
            "gold": _resolved(gold),
            "empty": _resolved(empty),
            "evidence": evidence.status,
            "flaky": flaky,
            "seen": {t: outcomes_seen(t, gold=gold, empty=empty) for t in flaky},
            "problems": problems,
            "evidence_left_out": dict(left_out),
        }
    )


def _without_gold(task: Task, verifier: Verifier, runs: int, out: TaskValidation) -> TaskValidation:
    """A migration without a gold patch (``agentbon tasks migration``): what can be checked without one, the empty
    patch failing, FAIL_TO_PASS failing and PASS_TO_PASS passing at the base, and every test stable over ``runs``."""
    empty = [verifier.verify(task, _rollout(task, i, ""), "grade") for i in range(runs)]
    infra = [v.reason for v in empty if v.status == "infra_error"]
    decided = [v for v in empty if v.status != "infra_error"]
    problems: list[str] = []
    if any(v.status == "pass" for v in decided):
        problems.append("the empty patch resolves the task")
    flaky = flaky_tests(empty)
    if decided:
        problems += base_problems(task, decided[0].tests, flaky)
    status = "invalid" if problems else ("infra_error" if infra and not decided else "valid")
    if infra:
        problems.append(f"infra errors: {infra[0]}")
    if flaky:
        problems.append(FLAKY_NOTE.format(len(flaky)))
    problems.append("no gold patch: whether the grade accepts a correct migration is not checked")
    return out.model_copy(
        update={
            "status": status,
            "gold": "—",
            "empty": _resolved(empty),
            "evidence": "grade",
            "flaky": flaky,
            "seen": {t: outcomes_seen(t, empty=empty) for t in flaky},
            "problems": problems,
        }  # fmt: skip
    )
