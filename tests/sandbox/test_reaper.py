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


def test_a_reaped_sandbox_takes_its_channel_folder_with_it(sandbox_config, tiny_task, engine):
    """A sandbox that never closed (a warm one nobody took, a dead unit's) leaves no channel folder behind; another
    mount's folder is never removed."""
    from pathlib import Path

    from agentbon.sandbox import DockerBackend

    backend = DockerBackend(sandbox_config.model_copy(update={"channel": True}), engine)
    run = _run_id()
    sandbox = backend.open(tiny_task, {"run_id": run, "rollout_id": "tiny/0"})
    folder = Path(sandbox.channel.host)
    assert folder.is_dir()
    assert backend.reap({"run_id": run}) == 1
    assert not folder.exists() and _count(engine, run) == 0


def test_only_a_channel_folder_is_taken_for_one():
    import tempfile

    from agentbon.sandbox.common import AGENT_DIR_INSIDE, CHANNEL_INSIDE, channel_folder

    tmp = tempfile.gettempdir()
    ours = {"Source": f"{tmp}/agentbon-ch-x1", "Destination": CHANNEL_INSIDE}
    assert str(channel_folder([{"Source": "/work/agent", "Destination": AGENT_DIR_INSIDE}, ours])) == ours["Source"]
    assert channel_folder([{"Source": "/home/me/project", "Destination": CHANNEL_INSIDE}]) is None  # not ours
    assert channel_folder([{"Source": f"{tmp}/agentbon-ch-x1", "Destination": AGENT_DIR_INSIDE}]) is None
    assert channel_folder([{"Source": f"{tmp}/deep/agentbon-ch-x1", "Destination": CHANNEL_INSIDE}]) is None
    assert channel_folder(None) is None
