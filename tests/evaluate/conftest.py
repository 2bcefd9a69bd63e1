"""Fixtures of the eval tests: the real Docker engine where there is one."""

from __future__ import annotations

import os

import pytest

from tests.swebench.conftest import mirror  # noqa: F401  - where SWE-bench fixture instances are cloned from


@pytest.fixture(scope="session")
def engine():
    """The Docker engine; the docker tests skip (saying why) only where there is none."""
    from agentbon.errors import EngineUnavailable
    from agentbon.sandbox.engine import docker_client

    try:
        return docker_client(timeout=60.0)
    except EngineUnavailable as e:
        if os.environ.get("AGENTBON_REQUIRE_DOCKER") == "1":
            pytest.fail(f"AGENTBON_REQUIRE_DOCKER=1 but {e}")
        pytest.skip(f"no Docker engine: {e}")
