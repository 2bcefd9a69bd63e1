"""No false alarms: every demo task's gold patch, graded with the full detection (canaries, second check, scan) in
real containers, resolves without a flag."""

from pathlib import Path

import pytest

from agentbon.config import VerifyConfig
from agentbon.tasks import load_suite
from agentbon.types import Rollout
from agentbon.verify import TestVerifier

DEMO = Path(__file__).resolve().parents[2] / "tasks" / "demo"


@pytest.mark.docker
def test_every_demo_gold_resolves_unflagged(docker_backend):
    tasks, errors = load_suite(DEMO)
    assert not errors and tasks
    verifier = TestVerifier(docker_backend, VerifyConfig(timeout_s=300, dedupe=False))
    for task in tasks:
        rollout = Rollout(run_id="r", task_id=task.task_id, index=0, status="submitted", patch=task.gold_patch or "")
        verdict = verifier.verify(task, rollout, "grade")
        assert verdict.status == "pass", f"{task.task_id}: {verdict.reason}\n{verdict.log}"
        assert verdict.flags == [], f"{task.task_id}: {verdict.flags}"
        assert f"the second check agrees on {len(task.grade.fail_to_pass)} FAIL_TO_PASS" in verdict.reason
