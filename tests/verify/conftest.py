"""Fixtures for the verifier: the tiny calc task, backends (``fake`` host clone, real ``docker``), the exploit check."""

from __future__ import annotations

from pathlib import Path

import pytest
from verify_task import CalcTask, CloneBackend, docker_backend_or_skip


@pytest.fixture
def calc(tmp_path: Path) -> CalcTask:
    return CalcTask(tmp_path / "task")


@pytest.fixture
def fake_backend(tmp_path: Path) -> CloneBackend:
    return CloneBackend(tmp_path / "sandboxes")


@pytest.fixture
def docker_backend():
    yield from docker_backend_or_skip()


@pytest.fixture(params=["fake", pytest.param("docker", marks=pytest.mark.docker)])
def backend(request, tmp_path: Path):
    if request.param == "fake":
        yield CloneBackend(tmp_path / "sandboxes")
    else:
        yield from docker_backend_or_skip()


@pytest.fixture
def exploit(calc):
    """Verify an exploit patch (grade role): it must not be resolved, and a correct patch must still verify after."""
    from agentbon.config import VerifyConfig
    from agentbon.verify import TestVerifier

    def run(backend, patch: str, timeout_s: float = 60.0, role: str = "grade"):
        verifier = TestVerifier(backend, VerifyConfig(timeout_s=timeout_s, dedupe=False))
        verdict = verifier.verify(calc.task, calc.rollout(patch), role)
        assert verdict.status != "pass", f"exploit graded resolved: {verdict.reason}\n{verdict.log}"
        assert verdict.status != "infra_error", verdict.reason
        gold = verifier.verify(calc.task, calc.rollout(calc.task.gold_patch), role)
        assert gold.status == "pass", f"verifier broken after exploit: {gold.reason}\n{gold.log}"
        assert gold.flags == [], f"false alarm on the gold patch: {gold.flags}"
        return verdict

    return run
