"""The test verifier on a tiny real task: gold resolves, empty and wrong patches don't, clear reasons."""

from __future__ import annotations

from agentbon.config import VerifyConfig
from agentbon.verify import TestVerifier


def test_gold_resolves_and_empty_does_not(calc, backend):
    verifier = TestVerifier(backend, VerifyConfig(timeout_s=60))
    gold = verifier.verify(calc.task, calc.rollout(calc.task.gold_patch), "grade")
    assert gold.status == "pass", gold.reason + gold.log
    assert gold.tests == {"tests/test_hidden.py::test_add": "passed", "tests/test_ops.py::test_mul": "passed"}
    # pytest exits 1: the verifier's must-fail canary ran in the same session (docs/security.md, "Canaries").
    assert gold.runner_exit_code == 1 and gold.patch_applied and gold.tampered == [] and gold.flags == []
    assert gold.reason == "all 2 tests passed; the second check agrees on 1 FAIL_TO_PASS"
    assert gold.parses is True and gold.parse_errors == []  # the image's python3 compiled calc/ops.py
    assert set(gold.test_s) == set(gold.tests) and all(0 <= s < gold.duration_s for s in gold.test_s.values())
    empty = verifier.verify(calc.task, calc.rollout(""), "grade")
    assert empty.status == "fail" and empty.parses is None
    assert empty.tests["tests/test_hidden.py::test_add"] == "failed"
    assert "FAIL_TO_PASS tests/test_hidden.py::test_add failed" in empty.reason


def test_evidence_role_runs_visible_tests_only(calc, fake_backend):
    verifier = TestVerifier(fake_backend, VerifyConfig(timeout_s=60))
    verdict = verifier.verify(calc.task, calc.rollout(""), "evidence")
    assert verdict.role == "evidence" and verdict.status == "pass"
    assert list(verdict.tests) == ["tests/test_ops.py::test_mul"]


def test_empty_evidence_is_undecided_without_a_sandbox(calc, fake_backend):
    task = calc.task.model_copy(update={"evidence": calc.task.evidence.model_copy(update={"pass_to_pass": []})})
    verdict = TestVerifier(fake_backend).verify(task, calc.rollout(calc.task.gold_patch), "evidence")
    assert verdict.status == "undecided" and fake_backend.opened == 0


def test_patch_that_does_not_apply(calc, fake_backend):
    bad = calc.task.gold_patch.replace("return a - b", "return a // b")
    verdict = TestVerifier(fake_backend).verify(calc.task, calc.rollout(bad), "grade")
    assert verdict.status == "fail" and not verdict.patch_applied
    assert verdict.reason.startswith("patch does not apply")


def test_wrong_fix_fails_and_regression_is_named(calc, fake_backend):
    wrong = calc.patch({"calc/ops.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"})
    verdict = TestVerifier(fake_backend, VerifyConfig(timeout_s=60)).verify(calc.task, calc.rollout(wrong), "grade")
    assert verdict.status == "fail"
    assert verdict.reason.startswith("PASS_TO_PASS tests/test_ops.py::test_mul failed")


def test_sandbox_gone_is_infra_error(calc, fake_backend):
    class Dying:
        isolation = "fake (none)"

        def open(self, task, labels=None):
            sandbox = fake_backend.open(task, labels)
            sandbox.kill()
            return sandbox

    verdict = TestVerifier(Dying()).verify(calc.task, calc.rollout(calc.task.gold_patch), "grade")
    assert verdict.status == "infra_error" and "SandboxGone" in verdict.reason


def test_sandbox_stopped_at_its_disk_limit_fails_the_candidate(calc, fake_backend):
    # The watchdog stopped the sandbox while the tests ran: what ran in it filled the disk, the candidate's doing,
    # so the verdict fails (counted) instead of an infra_error (retried).
    from agentbon.errors import SandboxDiskLimit

    class Full:
        isolation = "fake (none)"

        def open(self, task, labels=None):
            sandbox = fake_backend.open(task, labels)
            real_exec = sandbox.exec

            def exec(command, *args, **kwargs):
                if "run_pytest.py" in command:
                    raise SandboxDiskLimit("wrote 64m, past its limit of 64m")
                return real_exec(command, *args, **kwargs)

            sandbox.exec = exec
            return sandbox

    verdict = TestVerifier(Full()).verify(calc.task, calc.rollout(calc.task.gold_patch), "grade")
    assert verdict.status == "fail" and "disk limit" in verdict.reason


def test_a_file_that_does_not_compile_is_recorded_and_the_tests_still_decide(calc, fake_backend):
    verifier = TestVerifier(fake_backend, VerifyConfig(timeout_s=60))
    broken = calc.patch({"calc/ops.py": "def add(a, b):\n    return a +\n"})
    verdict = verifier.verify(calc.task, calc.rollout(broken), "grade")
    assert verdict.status == "fail" and verdict.parses is False
    assert [e.split(" ")[0] for e in verdict.parse_errors] == ["calc/ops.py:2:"]  # path:line: the message
    # The gold fix plus a broken module nothing imports: the tests pass it, the parse stage only records it.
    stray = calc.patch({"calc/scratch.py": "print(\n"})
    both = verifier.verify(calc.task, calc.rollout(calc.task.gold_patch + stray), "grade")
    assert both.status == "pass", both.reason
    assert both.parses is False and [e.split(":")[0] for e in both.parse_errors] == ["calc/scratch.py"]
