"""``verify.fail_to_pass_first``: the FAIL_TO_PASS tests run alone first, and a candidate that fails one stops there
(its PASS_TO_PASS tests are not run, and the verdict says which); a candidate that passes them runs the rest. The
status is always the one a single run of every test gives."""

from __future__ import annotations

import pytest
from test_flaky_grading import FLAKY_ID, counting_test, flaky_task
from verify_task import HIDDEN

from agentbon.config import VerifyConfig
from agentbon.verify import TestVerifier

P2P = "tests/test_ops.py::test_mul"
F2P = "tests/test_hidden.py::test_add"
COUNTED = "tests/test_counted.py::test_counted"


def verifier(backend, staged: bool = True, **config) -> TestVerifier:
    return TestVerifier(backend, VerifyConfig(timeout_s=60, dedupe=False, fail_to_pass_first=staged, **config))


def counted_task(calc, tmp_path):
    """The calc task with a PASS_TO_PASS test that counts its runs in a host file (so a test can see it did not
    run)."""
    counter = tmp_path / "counted"
    grade = calc.task.grade
    source = counting_test(counter, "False").replace("test_sometimes", "test_counted")
    grade = grade.model_copy(
        update={
            "patch": calc.patch({**HIDDEN, "tests/test_counted.py": source}),
            "files": [*grade.files, "tests/test_counted.py"],
            "pass_to_pass": [*grade.pass_to_pass, COUNTED],
        }
    )
    return calc.task.model_copy(update={"grade": grade}), counter


def test_a_candidate_that_fails_a_fail_to_pass_test_stops_there(calc, fake_backend, tmp_path):
    task, counter = counted_task(calc, tmp_path)
    verdict = verifier(fake_backend).verify(task, calc.rollout(""), "grade")  # the bug is still there
    assert verdict.status == "fail"
    assert verdict.reason.startswith(f"FAIL_TO_PASS {F2P} failed")
    assert "FAIL_TO_PASS first: 2 PASS_TO_PASS test(s) not run" in verdict.reason
    assert verdict.not_run == [P2P, COUNTED]
    assert set(verdict.tests) == {F2P} and set(verdict.test_s) <= {F2P}
    assert not counter.exists()  # really not run


def test_a_candidate_that_passes_them_runs_the_rest_and_is_graded_on_all(calc, fake_backend, tmp_path):
    task, counter = counted_task(calc, tmp_path)
    gold = calc.rollout(task.gold_patch)
    staged = verifier(fake_backend).verify(task, gold, "grade")
    whole = verifier(fake_backend, staged=False).verify(task, gold, "grade")
    assert staged.status == whole.status == "pass", staged.reason
    assert staged.reason.startswith("all 3 tests passed") and staged.not_run == []
    assert staged.tests == whole.tests == {F2P: "passed", P2P: "passed", COUNTED: "passed"}
    assert counter.read_text() == "2"  # once in each verification


def test_in_a_container_the_status_is_the_single_runs(calc, backend):
    for patch in ("", calc.task.gold_patch):
        staged = verifier(backend).verify(calc.task, calc.rollout(patch), "grade")
        whole = verifier(backend, staged=False).verify(calc.task, calc.rollout(patch), "grade")
        assert staged.status == whole.status, (staged.reason, whole.reason)
        assert staged.not_run == ([] if patch else [P2P]), staged.reason
        assert staged.flags == whole.flags == []


def test_exploit_breaking_a_pass_to_pass_test_still_fails_in_the_second_call(calc, backend):
    broken = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return 0\n"  # fixes add, breaks mul
    verdict = verifier(backend).verify(calc.task, calc.rollout(calc.patch({"calc/ops.py": broken})), "grade")
    assert verdict.status == "fail" and verdict.reason.startswith(f"PASS_TO_PASS {P2P} failed"), verdict.reason
    assert verdict.not_run == [] and verdict.tests == {F2P: "passed", P2P: "failed"}


def test_exploit_forging_the_fail_to_pass_run_is_no_early_pass(calc, fake_backend):
    """A candidate that ends the runner's process with exit 0 as the tests import it: the canaries catch it, so a
    fail, and the staged verification stops there instead of going on as if the FAIL_TO_PASS tests had passed."""
    forge = "import os\n\nos._exit(0)\n"
    patch = calc.patch({"calc/__init__.py": forge})
    verdict = verifier(fake_backend).verify(calc.task, calc.rollout(patch), "grade")
    assert verdict.status == "fail" and verdict.reason.startswith("forged:"), verdict.reason
    assert verdict.not_run == [P2P] and "forged" in verdict.flag_kinds


def test_a_flaky_fail_to_pass_test_that_fails_once_does_not_stop_the_run(calc, fake_backend, tmp_path):
    task, _ = flaky_task(calc, tmp_path, "n % 3 == 1", role="fail_to_pass")  # fails its first run only
    verdict = verifier(fake_backend).verify(task, calc.rollout(task.gold_patch), "grade")
    assert verdict.status == "pass", verdict.reason
    assert verdict.not_run == [] and verdict.flaky == {FLAKY_ID: "passed 2 of 3 run(s), 2 needed"}


def test_a_stopped_run_says_why_its_flaky_tests_were_not_rerun(calc, fake_backend, tmp_path):
    task, counter = flaky_task(calc, tmp_path, "False")  # a flaky PASS_TO_PASS test
    verdict = verifier(fake_backend).verify(task, calc.rollout(""), "grade")
    assert verdict.status == "fail" and FLAKY_ID in verdict.not_run
    assert verdict.flaky == {FLAKY_ID: "not rerun: a stable FAIL_TO_PASS test failed"}
    assert not counter.exists()


@pytest.mark.parametrize("runner_only", ["fail_to_pass", "pass_to_pass"])
def test_a_set_with_one_kind_of_test_runs_whole(calc, fake_backend, runner_only):
    other = "pass_to_pass" if runner_only == "fail_to_pass" else "fail_to_pass"
    grade = calc.task.grade.model_copy(update={other: []})
    task = calc.task.model_copy(update={"grade": grade})
    verdict = verifier(fake_backend).verify(task, calc.rollout(""), "grade")
    assert verdict.not_run == [] and "FAIL_TO_PASS first" not in verdict.reason
