"""Fixtures for the preflight tests: the real Docker engine where there is one, a model server on loopback."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.preflight.pf_support import ModelServer


@pytest.fixture(scope="session")
def engine():
    """The Docker engine; the docker tests skip (saying why) only where there is none."""
    from agentbon.errors import EngineUnavailable
    from agentbon.sandbox.engine import docker_client

    try:
        return docker_client(timeout=60.0)
    except EngineUnavailable as e:
        if os.environ.get("AGENTBON_REQUIRE_DOCKER") == "1":  # CI: a missing engine is a failure, not a skip
            pytest.fail(f"AGENTBON_REQUIRE_DOCKER=1 but {e}")
        pytest.skip(f"no Docker engine: {e}")


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    with ModelServer(["served-model"]) as server:
        yield server


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
