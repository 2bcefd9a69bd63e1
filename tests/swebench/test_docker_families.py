"""Real Docker: the three runner families in images laid out like SWE-bench's instance images.

Each instance names no image but an agentbon ``environment`` (deliverable: air-gapped data), so its image is
built on agentbon's base image and cached by content; its repository comes from a local mirror. The
harness's eval script runs as written (``/testbed``, ``conda activate testbed``), and for the gold, a wrong
and the empty patch agentbon's verdict equals what ``swebench``'s ``get_eval_report`` says on the same log.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentbon.config import VerifyConfig
from agentbon.tasks import load_suite
from agentbon.types import Rollout
from agentbon.verify import TestVerifier
from tests.swebench.families import FAMILIES
from tests.swebench.support import harness_or_skip

pytestmark = pytest.mark.docker

EXPECTED = {"gold": "pass", "wrong": "fail", "empty": "fail"}


def _official(record: dict, patch: str, log: str, tmp_path: Path) -> bool:
    from swebench.harness.grading import get_eval_report
    from swebench.harness.utils import make_test_spec

    path = tmp_path / "test_output.txt"
    path.write_text(log)
    spec = make_test_spec(record)
    prediction = {"instance_id": spec.instance_id, "model_name_or_path": "m", "model_patch": patch}
    return get_eval_report(spec, prediction, str(path), include_tests_status=True)[spec.instance_id]["resolved"]


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_grades_as_the_harness_does(name, built, backend, logs, tmp_path):
    harness_or_skip()
    made = built(name)
    suite = tmp_path / "instances.jsonl"
    suite.write_text(json.dumps(made.record) + "\n")
    (task,), errors = load_suite(suite)
    assert errors == [] and task.environment.image is None
    verifier = TestVerifier(backend, VerifyConfig(timeout_s=120, dedupe=False), labels={"stage": "swebench-test"})
    f2p = made.family.fail_to_pass[0]
    for index, which in enumerate(EXPECTED):
        rollout = Rollout(run_id="r", task_id=task.task_id, index=index, status="submitted", patch=made.patch(which))
        verdict = verifier.verify(task, rollout, "grade")
        assert verdict.status == EXPECTED[which], f"{which}: {verdict.reason}\n{verdict.log}"
        log = logs[-1]
        assert "+ conda activate testbed" in log
        assert _official(made.record, made.patch(which), log, tmp_path) == (verdict.status == "pass")
        # the tests really ran in the environment: the FAIL_TO_PASS test has an outcome, not "missing"
        assert verdict.tests[f2p] == ("passed" if which == "gold" else "failed"), verdict.log
        assert all(verdict.tests[t] == "passed" for t in made.family.pass_to_pass), verdict.tests
    gold = Rollout(run_id="r", task_id=task.task_id, index=9, status="submitted", patch=made.gold)
    evidence = verifier.verify(task, gold, "evidence")
    assert evidence.status == "pass", evidence.reason + "\n" + evidence.log
    assert sorted(evidence.tests) == sorted(made.family.evidence)
    assert f2p not in logs[-1].split(">>>>> Start Test Output")[-1]  # the hidden test did not run


def test_a_record_without_the_harnesss_script_is_graded_in_the_testbed_environment(built, backend, tmp_path):
    """A classic record (no ``eval_script``, pytest ids) is graded by agentbon's pytest runner, inside the image's
    activated ``testbed`` environment: its module imports ``fixturedep``, which only that environment has."""
    made = built("pytest")
    record = {k: v for k, v in made.record.items() if k not in ("eval_script", "log_parser", "eval_type")}
    suite = tmp_path / "classic.jsonl"
    suite.write_text(json.dumps(record) + "\n")
    (task,), errors = load_suite(suite)
    assert errors == [] and task.grade.runner == "pytest"
    verifier = TestVerifier(backend, VerifyConfig(timeout_s=120, dedupe=False), labels={"stage": "swebench-test"})
    f2p = made.family.fail_to_pass[0]
    for index, which in enumerate(EXPECTED):
        rollout = Rollout(run_id="r", task_id=task.task_id, index=index, status="submitted", patch=made.patch(which))
        verdict = verifier.verify(task, rollout, "grade")
        assert verdict.status == EXPECTED[which], f"{which}: {verdict.reason}\n{verdict.log}"
        assert verdict.tests[f2p] == ("passed" if which == "gold" else "failed"), verdict.log
        assert all(verdict.tests[t] == "passed" for t in made.family.pass_to_pass), verdict.tests
    evidence = verifier.verify(
        task, Rollout(run_id="r", task_id=task.task_id, index=9, status="submitted", patch=made.gold), "evidence"
    )
    assert evidence.status == "pass", evidence.reason + "\n" + evidence.log
