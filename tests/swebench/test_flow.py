"""The verifier's ``swebench`` path end to end on the host (fake sandbox): candidate, guard, eval script, verdict.

The harness's eval script runs here as written for the pytest family, except ``cd .`` for ``cd /testbed``
(the fake sandbox is a host clone); there is no conda, so ``fixturedep`` comes from PYTHONPATH. The same
families run in real instance-layout images in test_docker_families.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentbon.config import VerifyConfig
from agentbon.swebench import task_from_instance
from agentbon.taskcheck import finish_task
from agentbon.types import Rollout
from agentbon.verify import TestVerifier
from agentbon.verify.validate import validate_task
from tests.swebench.families import diff
from tests.swebench.support import harness_or_skip
from tests.verify.verify_task import CloneBackend


@pytest.fixture
def flow(built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    harness_or_skip()
    dep = tmp_path / "dep"
    dep.mkdir()
    (dep / "fixturedep.py").write_text("NAME = 'host'\n")
    monkeypatch.setenv("PYTHONPATH", str(dep))
    monkeypatch.setenv("HOME", str(tmp_path))  # the eval script runs `git config --global`
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the host's plugins only slow the runs down
    made = built("pytest", cd=".", environment=False)
    task = finish_task(task_from_instance(made.record, "fixture"), tmp_path, "fixture")
    backend = CloneBackend(tmp_path / "sandboxes")
    return made, task, TestVerifier(backend, VerifyConfig(timeout_s=120, dedupe=False))


def _rollout(task, patch: str, index: int = 0) -> Rollout:
    return Rollout(run_id="r", task_id=task.task_id, index=index, status="submitted", patch=patch)


@pytest.mark.parametrize(("which", "grade", "evidence"), [("gold", "pass", "pass"), ("wrong", "fail", "pass"),
                                                         ("empty", "fail", None)])  # fmt: skip
def test_gold_resolves_wrong_and_empty_do_not(flow, which, grade, evidence):
    made, task, verifier = flow
    verdict = verifier.verify(task, _rollout(task, made.patch(which)), "grade")
    assert verdict.status == grade, verdict.reason + "\n" + verdict.log
    assert set(verdict.tests) == set(task.grade.tests) and verdict.runner_exit_code == (0 if grade == "pass" else 1)
    if evidence is None:
        return
    seen = verifier.verify(task, _rollout(task, made.patch(which)), "evidence")
    assert seen.status == evidence, seen.reason + "\n" + seen.log
    # the evidence ran the base tests only: no hidden test, no test the test patch brings
    assert set(seen.tests) == set(made.family.evidence) and "test_add" not in seen.log


def test_a_patch_that_edits_the_hidden_test_file_is_flagged_and_undone(flow, tmp_path):
    made, task, verifier = flow
    # the wrong fix, plus a test file whose test_add always passes
    cheat = diff(Path(task.repo.url), {"tests/test_ops.py": "def test_add():\n    pass\n"}, tmp_path / "cheat")
    verdict = verifier.verify(task, _rollout(task, made.wrong + cheat), "grade")
    assert verdict.tampered == ["tests/test_ops.py"]
    assert verdict.status == "fail" and verdict.reason.startswith(f"FAIL_TO_PASS {made.family.fail_to_pass[0]} failed")


def test_patch_that_does_not_apply_fails(flow):
    _, task, verifier = flow
    verdict = verifier.verify(task, _rollout(task, "diff --git a/nope.py b/nope.py\n--- a/nope.py\n+++ b/nope.py\n"
                                                   "@@ -1 +1 @@\n-a\n+b\n"), "grade")  # fmt: skip
    assert verdict.status == "fail" and not verdict.patch_applied


def _stale_context(patch: str) -> str:
    """The patch with the first context line of each hunk changed: ``git apply`` refuses it, fuzz takes it."""
    out, fresh = [], False
    for line in patch.splitlines(keepends=True):
        if line.startswith("@@"):
            fresh = True
        elif fresh and line.startswith(" "):
            line, fresh = " # a line the candidate's base had" + line[1:], False
        out.append(line)
    return "".join(out)


def test_a_patch_that_applies_only_with_fuzz_is_applied_as_the_harness_does(flow):
    made, task, verifier = flow
    stale = _stale_context(made.patch("gold"))
    assert stale != made.patch("gold")
    verdict = verifier.verify(task, _rollout(task, stale), "grade")
    assert verdict.status == "pass" and verdict.patch_applied, verdict.reason + "\n" + verdict.log
    assert "applied only with patch --fuzz=5, as the harness applies it" in verdict.reason
    assert "applied only with" not in verifier.verify(task, _rollout(task, made.patch("gold"), 1), "grade").reason
    # Outside SWE-bench tasks a candidate applies as it was made, or not at all.
    plain = task.model_copy(update={"kind": "bugfix"})
    refused = verifier.verify(plain, _rollout(plain, stale, 2), "grade")
    assert refused.status == "fail" and not refused.patch_applied


def test_validate_names_the_evidence_left_out(flow):
    made, task, verifier = flow
    result = validate_task(task, verifier, runs=1)
    assert result.status == "valid", result.problems
    assert (result.gold, result.empty, result.evidence) == ("1/1", "0/1", "pass")
    assert result.evidence_left_out == {
        "tests/test_ops.py::TestOps::test_identity": "test_identity is defined by the test patch "
        "(in tests/test_ops.py), not before it",
        "tests/test_new.py::test_new_thing": "in tests/test_new.py, which the test patch creates",
    }
    assert result.problems == [
        "evidence: 2 test(s) left out: tests/test_ops.py::TestOps::test_identity: test_identity is defined by "
        "the test patch (in tests/test_ops.py), not before it (+1 more)"
    ]


def test_a_test_run_past_the_timeout_fails(flow, tmp_path):
    made, task, _ = flow
    slow = task.grade.eval_script.replace(": '>>>>> Start Test Output'", ": '>>>>> Start Test Output'\nsleep 60")
    task = task.model_copy(update={"grade": task.grade.model_copy(update={"eval_script": slow})})
    verifier = TestVerifier(CloneBackend(tmp_path / "slow"), VerifyConfig(timeout_s=3, dedupe=False))
    verdict = verifier.verify(task, _rollout(task, made.gold), "grade")
    assert (verdict.status, verdict.reason, verdict.timed_out) == ("fail", "test run timed out after 3s", True)
    assert verdict.log.endswith("\n\nTimeout error: 3 seconds exceeded.")  # the harness's line, which its triage reads
