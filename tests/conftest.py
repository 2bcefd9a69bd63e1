"""Shared fixtures. One local Ray per test session (ray.init costs ~2.5 s and ~450 MiB): extend, don't replace."""

from __future__ import annotations

import os

import pytest

RAY_RESOURCES = {"agentbon_sandbox": 4, "agentbon_verify": 2}
"""Sandbox slots the session's Ray declares (tests that need other counts start their own cluster in a subprocess)."""


@pytest.fixture(scope="session")
def ray_session():
    """A local Ray for the whole session, with agentbon's sandbox and verification slots; shut down at the end."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    started = False
    if not ray.is_initialized():
        ray.init(resources=RAY_RESOURCES, num_cpus=2, include_dashboard=False, log_to_driver=False)
        started = True
    yield ray
    if started:
        ray.shutdown()
