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
        # address="local": never join a Ray another session (or a killed one) left in /tmp/ray/ray_current_cluster.
        ray.init(address="local", resources=RAY_RESOURCES, num_cpus=2, include_dashboard=False, log_to_driver=False)
        started = True
    yield ray
    if started:
        ray.shutdown()


# ------------------------------------------------------------------------------------ sandbox leftovers

_SANDBOX_SESSION = f"pytest-{os.getpid()}-{os.urandom(3).hex()}"


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``-n``), every test that loads a model server runs on one worker, in turn: a vLLM engine
    takes ~9 GiB, and two model servers on 2 cores only slow each other down."""
    for item in items:
        if item.get_closest_marker("vllm") or item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.xdist_group("model"))


def pytest_configure(config):
    """Label every sandbox this session starts (and Ray workers it spawns) so leftovers can be told apart."""
    session = os.environ.setdefault("AGENTBON_SESSION", _SANDBOX_SESSION)
    # pytest-xdist's workers inherit the controller's label: each gets its own, or one worker's reap of "this
    # session's" sandboxes (a module's teardown) removes the other's mid-test.
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and not session.endswith(f"-{worker}"):
        os.environ["AGENTBON_SESSION"] = f"{session}-{worker}"


def pytest_sessionfinish(session, exitstatus):
    """Fail the session if it left agentbon sandboxes behind (then remove them, so the next run starts clean)."""
    from agentbon.sandbox.common import SESSION_ENV

    labels = {"session": os.environ.get(SESSION_ENV, _SANDBOX_SESSION)}
    try:
        from agentbon.errors import EngineUnavailable
        from agentbon.sandbox.engine import docker_client, reap_containers
        from agentbon.sandbox.process import reap_process_sandboxes
    except ImportError:  # the sandbox package is not importable: nothing of ours can be running
        return
    left = reap_process_sandboxes(labels)
    try:
        left += reap_containers(docker_client(timeout=30.0), labels)
    except EngineUnavailable:
        pass
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = f"agentbon: {left} sandbox(es) were left behind by this test session (now removed)"
        if reporter:
            reporter.write_line(message, red=True)
        session.exitstatus = 1
