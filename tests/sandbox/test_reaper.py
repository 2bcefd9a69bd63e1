"""Reaping against the real engine: leftovers go by label, and on `agentbon cleanup`."""

from __future__ import annotations

import uuid

import pytest
from typer.testing import CliRunner

from agentbon.cli import app
from agentbon.sandbox import reap

pytestmark = pytest.mark.docker


def _count(engine, run_id: str) -> int:
    return len(engine.containers.list(all=True, filters={"label": [f"agentbon.run_id={run_id}"]}))


def _run_id() -> str:
    return f"reaptest-{uuid.uuid4().hex[:8]}"


def test_reap_removes_only_the_runs_leftovers(backend, tiny_task, engine):
    mine, other = _run_id(), _run_id()
    backend.open(tiny_task, {"run_id": mine, "rollout_id": "tiny/0"})
    backend.open(tiny_task, {"run_id": mine, "rollout_id": "tiny/1"})
    kept = backend.open(tiny_task, {"run_id": other})
    try:
        assert backend.reap({"run_id": mine}) == 2
        assert _count(engine, mine) == 0 and _count(engine, other) == 1
        assert kept.alive()
    finally:
        kept.close()


def test_a_container_removed_while_the_reap_lists_is_no_error(backend, tiny_task, engine):
    from agentbon.sandbox.engine import docker_client, reap_containers

    run = _run_id()
    gone = backend.open(tiny_task, {"run_id": run, "rollout_id": "tiny/0"})
    backend.open(tiny_task, {"run_id": run, "rollout_id": "tiny/1"})
    client = docker_client()
    listed = client.api.containers

    def racing(*args, **kwargs):
        found = listed(*args, **kwargs)
        client.api.remove_container(gone._cid, force=True)  # a closed sandbox's background removal, meanwhile
        return found

    client.api.containers = racing  # the interleaving that failed whole end-of-run reaps (docker-py's list inspects)
    assert reap_containers(client, {"run_id": run}) == 1
    assert _count(engine, run) == 0


def test_cleanup_command_reports_how_many(backend, tiny_task, engine):
    run_id = _run_id()
    backend.open(tiny_task, {"run_id": run_id})
    result = CliRunner().invoke(app, ["cleanup", "--run-id", run_id])
    assert result.exit_code == 0 and f"removed 1 sandbox(es) of run {run_id}" in result.output
    assert _count(engine, run_id) == 0
    again = CliRunner().invoke(app, ["sandbox", "cleanup", "--run-id", run_id])
    assert again.exit_code == 0 and "removed 0 sandbox(es)" in again.output


def test_reap_function_covers_both_backends(backend, tiny_task, engine, tmp_path):
    from agentbon.config import SandboxConfig
    from agentbon.sandbox import ProcessBackend

    run_id = _run_id()
    backend.open(tiny_task, {"run_id": run_id})
    ProcessBackend(SandboxConfig(backend="process"), cache_dir=tmp_path).open(tiny_task, {"run_id": run_id})
    assert reap({"run_id": run_id}) == 2
