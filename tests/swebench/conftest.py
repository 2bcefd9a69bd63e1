"""Fixtures for the SWE-bench tests: the three runner families made real under ``tmp_path``, the mirror setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentbon.config import SandboxConfig
from agentbon.swebench import MIRROR_ENV
from tests.swebench.families import FAMILIES, Built, build


@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of repositories that instances are cloned from (``AGENTBON_SWEBENCH_MIRROR=<folder>/{repo}``)."""
    root = tmp_path / "mirror"
    root.mkdir()
    monkeypatch.setenv(MIRROR_ENV, f"{root}/{{repo}}")
    return root


@pytest.fixture
def built(tmp_path: Path, mirror: Path):
    """Build one family by name (its repository goes into the mirror)."""

    def make(name: str, **options) -> Built:
        return build(FAMILIES[name], mirror, tmp_path / f"scratch-{name}", **options)

    return make


@pytest.fixture(scope="module")
def backend():
    """The real Docker backend, for the tests that grade in fixture images (skipped without an engine)."""
    try:
        from agentbon.sandbox.docker import DockerBackend
    except ImportError as e:
        pytest.skip(f"docker backend not available: {e}")
    backend = DockerBackend(SandboxConfig(cpus=1.0, memory="1g", pids=256))
    try:
        backend.client.ping()
    except Exception as e:  # the engine is not reachable on this machine
        pytest.skip(f"docker engine not reachable: {e}")
    return backend


@pytest.fixture
def logs(monkeypatch):
    """Every log ``harness.judge`` is given, in order (the real function still decides)."""
    seen: list[str] = []
    from agentbon.verify import harness

    judge = harness.judge

    def spy(task, tests, patch, log):
        seen.append(log)
        return judge(task, tests, patch, log)

    monkeypatch.setattr(harness, "judge", spy)
    return seen
