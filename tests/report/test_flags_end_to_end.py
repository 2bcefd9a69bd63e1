"""Flags from the verifier to summary.json through the real driver, selectors and report (fakes only for the
agent, the model, the sandbox and the verifier's tests): a flagged candidate that passes is never the winner."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest
import ray

from agentbon.orchestrate import run_batch
from agentbon.orchestrate.factories import default_report, default_selector
from agentbon.testing import FakeVerifier
from agentbon.types import Flag
from tests.orchestrate.orch_support import config, fakes, make_tasks

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_session")]


class ForgeryFlaggingVerifier(FakeVerifier):
    """The fake verifier, plus: a patch adding ``FORGE`` passes but its verdict carries a ``forged`` flag."""

    def verify(self, task, rollout, role):
        verdict = super().verify(task, rollout, role)
        if "FORGE" in rollout.patch:
            flag = Flag(kind="forged", detail="canary test_c4 passed but was planted to fail")
            verdict = verdict.model_copy(update={"flags": [flag]})
        return verdict


def test_a_forged_pass_never_wins_and_the_summary_says_so(tmp_path: Path) -> None:
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import a test module
    tasks = make_tasks(tmp_path, ["a", "b"])
    # a: rollout 0 forges a pass, rollout 1 fixes honestly. b: every rollout forges.
    table = {"a/0": "FIX FORGE", "a/1": "FIX", "b/0": "FIX FORGE", "b/1": "FIX FORGE"}
    factories = dataclasses.replace(
        fakes(tmp_path, table),
        verifier=lambda cfg: ForgeryFlaggingVerifier(cfg),
        selector=default_selector,
        report=default_report,
    )
    cfg = config(tmp_path, "n=2", "select.selectors=[tests, oracle]", "select.critic=none", run_id="flags")
    result = run_batch(tasks, cfg, factories=factories)
    summary = json.loads((result.path / "summary.json").read_text())
    winners = {t["task_id"]: t["winners"] for t in summary["per_task"]}
    assert winners["a"]["tests"] == "a/1"  # the honest fix, although both pass the evidence
    assert winners["b"]["tests"] is None  # every candidate flagged: no winner
    flags = summary["flags"]
    assert flags["by_kind"] == {"forged": 3} and flags["per_task"] == {
        "a": {"forged": ["a/0"]},
        "b": {"forged": ["b/0", "b/1"]},
    }
    assert flags["winners"]["tests"] == {} and set(flags["winners"]["oracle"]) <= {"a", "b"}
    assert summary["metrics"]["selectors"]["tests"]["winners_resolved"] == 1
    assert "Flags (what verification saw candidates do)" in (result.path / "report.md").read_text()
