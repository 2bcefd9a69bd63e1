"""What one test run says, as a record: ``Judged``, and the pure judgement of a runner's report that makes one.

The verifier's steps (verify/runner.py) hand a ``Judged`` from one to the next: the status and reason a run of the
tests gives, with the verdict fields it sets (outcomes, times, flags, log). ``judge_run`` decides it from what
agentbon's runner wrote (its ``result.json`` and JUnit XML) with no sandbox at hand: the canaries, files changed
during the run, the exit code against the XML, then the grade (docs/security.md, "Canaries", "Exit-code cross-check").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from agentbon.types import Flag, TestOutcome, TestSet, VerdictStatus
from agentbon.verify import canary
from agentbon.verify.grading import crosscheck, grade, graded_ids
from agentbon.verify.junit import JUnitError, durations_for, outcomes_for, parse_junit


@dataclass(frozen=True)
class Judged:
    """A run's status and reason, with the ``Verdict`` fields it sets."""

    status: VerdictStatus
    reason: str
    tests: dict[str, TestOutcome] | None = None
    """Outcome of each graded test; None where no outcome was read (no XML, a timeout, a patch that did not apply)."""
    test_s: dict[str, float] = field(default_factory=dict)
    flags: tuple[Flag, ...] = ()
    log: str = ""
    runner_exit_code: int | None = None
    timed_out: bool = False
    patch_applied: bool = True
    not_run: tuple[str, ...] = ()
    """Graded tests left unrun by ``verify.fail_to_pass_first`` after a FAIL_TO_PASS test failed."""
    flaky: dict[str, str] = field(default_factory=dict)
    error_kind: str | None = None
    """An ``infra_error``'s kind (``SandboxGone``...); ``VerifyInfra`` where none is given (``Verdict.error_kind``)."""

    def replace(self, **changes: Any) -> Judged:
        return dataclasses.replace(self, **changes)

    def flagged(self, *flags: Flag) -> Judged:
        return self.replace(flags=(*self.flags, *flags))

    def by_outcomes(self, tests: TestSet) -> bool:
        """Whether this status is the one its test outcomes give (not forged, timed out, contradicted or otherwise
        not trusted): only then may another run's outcomes be added to it."""
        return self.tests is not None and grade(tests, self.tests) == (self.status, self.reason)

    def verdict_fields(self) -> dict[str, Any]:
        """The ``Verdict`` fields this sets (``tests`` only where outcomes were read)."""
        out: dict[str, Any] = {
            "status": self.status, "reason": self.reason, "test_s": self.test_s, "flags": list(self.flags),
            "log": self.log, "runner_exit_code": self.runner_exit_code, "timed_out": self.timed_out,
            "patch_applied": self.patch_applied, "not_run": list(self.not_run), "flaky": self.flaky,
        }  # fmt: skip
        if self.tests is not None:
            out["tests"] = self.tests
        if self.status == "infra_error":
            out["error_kind"] = self.error_kind or "VerifyInfra"
        return out


class Failed(Exception):
    """Ends one verification early with what it came to (not an error of agentbon)."""

    def __init__(self, judged: Judged):
        super().__init__(judged.reason)
        self.judged = judged


def fail(reason: str, status: VerdictStatus = "fail", **fields: Any) -> Failed:
    """The exception that ends a verification as ``Judged(status, reason, **fields)``."""
    return Failed(Judged(status, reason, **fields))


def timed_out_log(output: str, timeout_s: float) -> str:
    """A timed-out run's output as the SWE-bench harness leaves it: the tail, then its own line (which its triage
    reads)."""
    return f"{output[-4000:]}\n\nTimeout error: {timeout_s:g} seconds exceeded."


def outside_write_flag(report: dict[str, Any]) -> Flag | None:
    """The ``outside_write`` flag for what the runner saw the test run change in the interpreter's directories
    outside the repository (``agentbon_supervise.OutsideWatch``; docs/security.md, "Writes outside the repository")."""
    changed = [str(p) for p in report.get("outside_changes") or []]
    if not changed:
        return None
    total = int(report.get("outside_changes_total") or len(changed))
    shown = ", ".join(changed[:3]) + (f" and {total - 3} more" if total > 3 else "")
    return Flag(
        kind="outside_write",
        detail=f"the test run changed {total} path(s) outside the repository: {shown}",
        paths=changed,
    )


def judge_run(
    tests: TestSet, report: dict[str, Any], junit: bytes | None, plan: canary.Plan | None, timeout_s: float
) -> Judged:
    """The verdict on one run of agentbon's runner: ``report`` its ``result.json``, ``junit`` the XML it wrote (None
    where it wrote none), ``plan`` the canaries planted for it."""
    code = report.get("exit_code")
    outside = outside_write_flag(report)
    base = Judged(
        "fail", "", runner_exit_code=code, log=str(report.get("output", ""))[-4000:], flags=(outside,) if outside else ()
    )
    if report.get("timed_out"):
        return base.replace(
            reason=f"test run timed out after {timeout_s:g}s", timed_out=True, log=timed_out_log(base.log, timeout_s)
        )
    forged = _forged(tests, report, junit, plan)
    if forged is not None:
        return base.flagged(*forged.flags).replace(reason=forged.reason, tests=forged.tests)
    if report.get("changed_during_run"):
        return base.replace(reason=f"not trusted: files changed during the run: {report['changed_during_run'][:3]}")
    if junit is None:
        return base.replace(reason="runner exited 0 but wrote no JUnit XML" if code == 0 else f"no JUnit XML (runner exit {code})")
    try:
        cases = parse_junit(junit)
    except JUnitError as e:
        return base.replace(reason=f"not trusted: {e}")
    ids = graded_ids(tests)
    read = base.replace(tests=outcomes_for(ids, cases, tests.runner), test_s=durations_for(ids, cases, tests.runner))
    contradiction = crosscheck(tests.runner, code, cases)
    if contradiction:
        return read.replace(reason=f"not trusted: {contradiction}")
    status, reason = grade(tests, read.tests or {})
    return read.replace(status=status, reason=reason)


def _forged(tests: TestSet, report: dict[str, Any], junit: bytes | None, plan: canary.Plan | None) -> Judged | None:
    """A ``forged`` fail where the canaries did not come out as planted (with the outcomes read, where the XML
    parses), else None."""
    if plan is None:
        return None
    try:
        cases = parse_junit(junit) if junit is not None else None
    except JUnitError:
        cases = None  # judged as not trusted; the exit code and the files are still checked
    graded = outcomes_for(graded_ids(tests), cases, tests.runner) if cases is not None else {}
    problems = canary.problems(plan, cases, report.get("exit_code"), report.get("canaries_changed") or [], graded)
    if not problems:
        return None
    detail = problems[0] + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
    return Judged(
        "fail", f"forged: {detail}", tests=graded if cases is not None else None, flags=(Flag(kind="forged", detail=detail),)
    )
