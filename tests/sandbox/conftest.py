"""Fixtures for the sandbox tests: a tiny task made from a git repository with a past and a future."""

from __future__ import annotations

import os
import uuid

import pytest
from sbx_repo import TinyRepo, make_repo, make_task

from agentbon.config import SandboxConfig
from agentbon.types import Task


@pytest.fixture(scope="session")
def tiny_repo(tmp_path_factory) -> TinyRepo:
    return make_repo(tmp_path_factory.mktemp("tiny") / "repo")


@pytest.fixture(scope="session")
def tiny_task(tiny_repo) -> Task:
    return make_task(tiny_repo)


@pytest.fixture(scope="session")
def run_labels() -> dict[str, str]:
    return {"run_id": f"sbxtest-{uuid.uuid4().hex[:8]}"}


@pytest.fixture(scope="session")
def sandbox_config() -> SandboxConfig:
    return SandboxConfig(cpus=1.0, memory="256m", pids=64, exec_timeout_s=30.0, output_limit=4000)


@pytest.fixture(scope="session")
def engine():
    """The Docker engine; the docker tests skip (saying why) only where there is none."""
    from agentbon.errors import EngineUnavailable
    from agentbon.sandbox.engine import docker_client

    try:
        return docker_client(timeout=120.0)
    except EngineUnavailable as e:
        if os.environ.get("AGENTBON_REQUIRE_DOCKER") == "1":  # CI: a missing engine is a failure, not a skip
            pytest.fail(f"AGENTBON_REQUIRE_DOCKER=1 but {e}")
        pytest.skip(f"no Docker engine: {e}")


@pytest.fixture(scope="session")
def backend(engine, sandbox_config, run_labels):
    from agentbon.sandbox import DockerBackend

    backend = DockerBackend(sandbox_config, engine)
    yield backend
    backend.reap(run_labels)


@pytest.fixture
def box(backend, tiny_task, run_labels):
    with backend.open(tiny_task, {**run_labels, "rollout_id": "tiny/0", "purpose": "test"}) as sandbox:
        yield sandbox
