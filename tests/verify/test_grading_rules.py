"""SWE-bench grading semantics and the exit-code cross-check."""

import pytest

from agentbon.types import TestSet
from agentbon.verify.grading import crosscheck, grade
from agentbon.verify.junit import Case

TESTS = TestSet(fail_to_pass=["t.py::f2p"], pass_to_pass=["t.py::p2p"])


def test_resolved_iff_every_test_passed():
    assert grade(TESTS, {"t.py::f2p": "passed", "t.py::p2p": "passed"}) == ("pass", "all 2 tests passed")


@pytest.mark.parametrize("outcome", ["failed", "error", "skipped", "xfailed", "xpassed", "missing"])
def test_anything_but_passed_fails_a_fail_to_pass_test(outcome):
    status, reason = grade(TESTS, {"t.py::f2p": outcome, "t.py::p2p": "passed"})
    assert status == "fail" and reason == f"FAIL_TO_PASS t.py::f2p {outcome}"


def test_absent_and_regressed_tests_are_counted():
    status, reason = grade(TESTS, {"t.py::p2p": "skipped"})
    assert status == "fail" and reason == "FAIL_TO_PASS t.py::f2p missing (+1 more not passing)"
    assert grade(TESTS, {"t.py::f2p": "passed", "t.py::p2p": "failed"})[1] == "PASS_TO_PASS t.py::p2p failed"


def test_command_runner_grades_its_pseudo_test():
    tests = TestSet(runner="command", command="make check")
    assert grade(tests, {"command": "passed"})[0] == "pass"
    assert grade(tests, {"command": "failed"})[0] == "fail"


PASS = Case("t", "a", "passed")
FAIL = Case("t", "b", "failed")


@pytest.mark.parametrize(
    "code,cases,trusted",
    [
        (0, [PASS], True),
        (1, [PASS, FAIL], True),
        (0, [PASS, FAIL], False),  # exit 0 despite failures: something forced the exit code
        (1, [PASS], False),  # failures claimed by the exit code but none in the XML: the XML was forged
        (-9, [PASS], False),
        (5, [], True),  # pytest: no tests collected
        (5, [Case("", "tests.t", "skipped")], True),
        (5, [PASS], False),
    ],
)
def test_crosscheck(code, cases, trusted):
    assert (crosscheck("pytest", code, cases) is None) == trusted
