"""Preflight: tasks graded by the SWE-bench harness need the swebench extra, named before anything runs."""

from __future__ import annotations

import importlib.util

import pytest

from agentbon.config import RunConfig
from agentbon.preflight import Context
from agentbon.preflight.model import check_harness
from agentbon.types import RepoSource, Task, TestSet


def task(runner: str) -> Task:
    return Task(task_id=f"t-{runner}", problem_statement="p", repo=RepoSource(url="/x", base_commit="HEAD"),
                grade=TestSet(runner=runner, fail_to_pass=["a"]))  # type: ignore[arg-type]


def test_no_harness_task_needs_nothing() -> None:
    assert check_harness(Context(RunConfig(), [task("pytest")], None)) == []


def test_a_harness_task_needs_the_swebench_package(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "swebench" else real(name, *a))
    [problem] = check_harness(Context(RunConfig(), [task("swebench"), task("pytest")], None))
    assert problem.fatal and "t-swebench" in problem.cause and "agentbon[swebench]" in problem.fix
