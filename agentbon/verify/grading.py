"""SWE-bench grading semantics and the cross-check of a runner's exit code against its JUnit XML.

Resolved iff every FAIL_TO_PASS and every PASS_TO_PASS test passed. Stricter than SWE-bench's
harness in one respect, on purpose: only ``passed`` counts, so a FAIL_TO_PASS test that was
skipped, xfailed or is missing from the XML is failed, and so is a PASS_TO_PASS test that was
skipped (the candidate can make a module call ``pytest.skip`` at import time).
"""

from __future__ import annotations

from agentbon.types import TestOutcome, TestSet, VerdictStatus
from agentbon.verify.junit import Case


def graded_ids(tests: TestSet) -> list[str]:
    """The ids a test set is graded on (the ``command`` runner has one pseudo-test, ``command``)."""
    if tests.runner == "command":
        return ["command"]
    return tests.tests


def grade(tests: TestSet, outcomes: dict[str, TestOutcome]) -> tuple[VerdictStatus, str]:
    """``pass`` iff every graded test passed; otherwise ``fail`` with the first offender named."""
    if tests.runner == "command":
        ok = outcomes.get("command") == "passed"
        return ("pass", "command exited 0") if ok else ("fail", f"command {outcomes.get('command', 'missing')}")
    bad_f2p = [t for t in tests.fail_to_pass if outcomes.get(t) != "passed"]
    bad_p2p = [t for t in tests.pass_to_pass if outcomes.get(t) != "passed"]
    if not bad_f2p and not bad_p2p:
        return "pass", f"all {len(tests.tests)} tests passed"
    role, first = ("FAIL_TO_PASS", bad_f2p[0]) if bad_f2p else ("PASS_TO_PASS", bad_p2p[0])
    more = len(bad_f2p) + len(bad_p2p) - 1
    return "fail", f"{role} {first} {outcomes.get(first, 'missing')}" + (f" (+{more} more not passing)" if more else "")


def crosscheck(runner: str, exit_code: int | None, cases: list[Case]) -> str | None:
    """Why the runner's exit code contradicts its JUnit XML, or None when they agree."""
    failing = any(c.outcome in ("failed", "error") for c in cases)
    if exit_code == 0 and failing:
        return "runner exited 0 but its JUnit XML records failures"
    if exit_code != 0 and not failing:
        if runner == "pytest" and exit_code == 5 and all(not c.classname for c in cases):
            return None  # pytest: no test collected (modules skipped at import); the ids then fail on their own
        return f"JUnit XML records no failure but the runner exited {exit_code}"
    return None
