"""The unittest and command runners on the same tiny task (JUnit XML written by agentbon's wrappers)."""

from agentbon.config import VerifyConfig
from agentbon.types import TestSet
from agentbon.verify import TestVerifier


def _with_grade(calc, grade: TestSet):
    return calc.task.model_copy(update={"grade": grade})


def test_unittest_runner(calc, backend):
    test_patch = calc.patch(
        {
            "tests/test_hidden.py": "import unittest\nfrom calc.ops import add, mul\n\n\n"
            "class T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
            "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n\n"
            "    @unittest.skip('x')\n    def test_skipped(self):\n        pass\n"
        }
    )
    grade = TestSet(
        runner="unittest",
        fail_to_pass=["tests.test_hidden.T.test_add"],
        pass_to_pass=["tests/test_hidden.py::T::test_mul", "tests.test_nope.T.test_x"],
        patch=test_patch,
    )
    task = _with_grade(calc, grade)
    verifier = TestVerifier(backend, VerifyConfig(timeout_s=60))
    gold = verifier.verify(task, calc.rollout(calc.task.gold_patch), "grade")
    assert gold.tests["tests.test_hidden.T.test_add"] == "passed"
    assert gold.tests["tests/test_hidden.py::T::test_mul"] == "passed"
    assert gold.tests["tests.test_nope.T.test_x"] == "error"  # cannot be imported
    assert gold.status == "fail" and "tests.test_nope.T.test_x error" in gold.reason
    task = _with_grade(calc, grade.model_copy(update={"pass_to_pass": ["tests.test_hidden.T.test_mul"]}))
    assert verifier.verify(task, calc.rollout(calc.task.gold_patch), "grade").status == "pass"
    empty = verifier.verify(task, calc.rollout(""), "grade")
    assert empty.status == "fail" and empty.tests["tests.test_hidden.T.test_add"] == "failed"
    assert empty.runner_exit_code == 1


def test_command_runner(calc, backend):
    grade = TestSet(runner="command", command="python3 -c 'from calc.ops import add; assert add(2, 3) == 5'")
    task = _with_grade(calc, grade)
    verifier = TestVerifier(backend, VerifyConfig(timeout_s=60))
    gold = verifier.verify(task, calc.rollout(calc.task.gold_patch), "grade")
    assert gold.status == "pass" and gold.tests == {"command": "passed"}
    empty = verifier.verify(task, calc.rollout(""), "grade")
    assert empty.status == "fail" and empty.reason == "command failed" and empty.runner_exit_code == 1
