"""The command agent (``agent.type=command``): a small real agent program over the ``openai`` package
(command_program/agent.py) runs in the sandbox, its model behind the rollout's proxy, the model a fake OpenAI server
on the host reached through agentbon's own client. Process backend here; Docker (marker ``docker``) below."""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import socket
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from pydantic import ValidationError

from agentbon.agent import make_agent
from agentbon.agent.base import call_seed
from agentbon.config import AgentConfig, RunConfig, SandboxConfig
from agentbon.errors import EngineUnavailable
from agentbon.models.openai_client import OpenAIClient
from agentbon.preflight import preflight
from agentbon.sandbox.process import ProcessBackend
from tests.models.fake_openai import FakeOpenAIServer, Reply, completion

PROGRAM = Path(__file__).with_name("command_program")
FIX = "```bash\nsed -i 's/return a - b/return a + b/' calc/ops.py\n```"


def usage(i: int) -> dict:
    return {"prompt_tokens": 100 + i, "completion_tokens": 7, "total_tokens": 107 + i,
            "prompt_tokens_details": {"cached_tokens": 64}}  # fmt: skip


def scripted(replies: list[str]):
    """The fake server's script: ``replies`` in turn (the last one again past the end), each with its usage."""
    return lambda i, body: Reply(body=completion([replies[min(i, len(replies) - 1)]], usage=usage(i)))


def program(agent_dir: Path, limit_s: float = 120.0, **settings) -> AgentConfig:
    command = "python3 $AGENTBON_AGENT_DIR/agent.py"
    return AgentConfig(type="command", command=command, command_mount=str(agent_dir), time_limit_s=limit_s, **settings)


def check_fixed_run(result, server, spec, patch: str) -> None:
    """Two calls answered, counted exactly as the server reported them, seeded per step, the fix as the patch."""
    assert (result.status, result.exit_status, result.steps) == ("submitted", "Submitted", 2)
    u = result.usage
    assert (u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.calls) == (100 + 101, 14, 128, 2)
    assert [r["seed"] for r in server.requests] == [call_seed(spec.seed, 1), call_seed(spec.seed, 2)]
    assert all("temperature" not in r for r in server.requests)  # the run's sampling, not the program's 1.5
    kinds = [m["extra"].get("kind", m["role"]) for m in result.messages]
    assert kinds == ["system", "instance", "assistant", "request", "assistant", "program_exit"]
    assert result.messages[2]["extra"]["ignored"] == ["temperature"]
    assert "add(2, 3)" in Path(result.messages[1]["content"]).name or "add(2, 3)" in result.messages[1]["content"]
    last = result.messages[-1]["extra"]
    assert (last["exit_code"], last["requests"], last["exit_status"]) == (0, 2, "Submitted")
    assert "usage: 100 7" in result.messages[-1]["content"]
    assert "+    return a + b" in patch and "calc/ops.py" in patch


@pytest.fixture
def process_backend(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBON_CACHE", str(tmp_path / "cache"))
    return ProcessBackend(SandboxConfig(backend="process", channel=True, agent_dir=str(PROGRAM)))


def test_config_refuses_a_command_agent_without_a_command_or_with_a_missing_folder(tmp_path):
    with pytest.raises(ValidationError, match="agent.type=command needs agent.command"):
        AgentConfig(type="command")
    with pytest.raises(ValidationError, match="no such folder"):
        AgentConfig(type="command", command="true", command_mount=str(tmp_path / "gone"))
    with pytest.raises(ValidationError, match="does nothing unless agent.type=command"):
        RunConfig(run_dir=str(tmp_path), agent={"command": "true"})
    config = RunConfig(run_dir=str(tmp_path), agent={"type": "command", "command": "x", "command_mount": str(tmp_path)})
    assert (config.rollout_sandbox().channel, config.rollout_sandbox().agent_dir) == (True, str(tmp_path))
    assert (config.sandbox.channel, config.sandbox.agent_dir) == (False, None)  # verification sandboxes get neither


def test_a_real_openai_program_fixes_the_repository_through_the_proxy(process_backend, task, spec):
    with FakeOpenAIServer(scripted([FIX, "DONE"])) as server, process_backend.open(task, {"run": "cmd"}) as box:
        result = make_agent(program(PROGRAM)).run(task, box, OpenAIClient(server.url, "fake"), spec)
        check_fixed_run(result, server, spec, box.diff())


def test_a_call_over_the_step_limit_is_refused_and_the_program_stopped(process_backend, task, spec):
    loop = "```bash\necho again\n```"
    with FakeOpenAIServer(scripted([loop])) as server, process_backend.open(task, {"run": "cmd"}) as box:
        result = make_agent(program(PROGRAM, step_limit=2)).run(task, box, OpenAIClient(server.url, "fake"), spec)
    outcome = (result.status, result.exit_status, result.steps, len(server.requests))
    assert outcome == ("step_limit", "LimitsExceeded", 2, 2)
    assert result.messages[-1]["extra"]["exit_message"] == "step limit reached: 2 of 2 model calls"
    assert result.messages[-1]["extra"]["exit_code"] != 0  # stopped, not finished
    assert result.usage.prompt_tokens == 100 + 101


def test_a_failing_program_is_the_agents_outcome(process_backend, task, spec):
    config = AgentConfig(type="command", command="echo working; exit 3", time_limit_s=60)
    with process_backend.open(task, {"run": "cmd"}) as box:
        result = make_agent(config).run(task, box, OpenAIClient("http://127.0.0.1:9/v1", "none"), spec)
    assert (result.status, result.exit_status, result.steps) == ("agent_error", "CommandFailed", 0)
    assert "working" in result.messages[-1]["content"]


def test_preflight_refuses_a_broken_program_and_passes_a_working_one(tmp_path, process_backend, task):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "agent.py").write_text("import no_such_module_q7\n")
    config = RunConfig(
        run_dir=str(tmp_path / "runs"), sandbox={"backend": "process"}, model={"endpoint": "http://127.0.0.1:9/v1"},
        agent={"type": "command", "command": "python3 $AGENTBON_AGENT_DIR/agent.py", "command_mount": str(broken)},
    )  # fmt: skip
    problems = preflight(config, [task], checks=["command"])
    assert len(problems) == 1 and problems[0].fatal
    assert "exited with status 1" in problems[0].cause and "No module named 'no_such_module_q7'" in problems[0].cause
    working = config.model_copy(update={"agent": config.agent.model_copy(update={"command_mount": str(PROGRAM)})})
    assert preflight(working, [task], checks=["command"]) == []


# ------------------------------------------------------------------------------------------------------ Docker


def vendor(dest: Path, name: str, seen: set[str] | None = None) -> None:
    """Copy an installed distribution and what it requires (no extras) into ``dest``, as ``pip --target`` would."""
    seen = set() if seen is None else seen
    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in seen:
        return
    seen.add(key)
    dist = importlib.metadata.distribution(name)
    for file in dist.files or []:
        source = Path(dist.locate_file(file))
        if source.is_file() and ".." not in file.parts and "__pycache__" not in file.parts:
            (dest / file).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest / file)
    for line in dist.requires or []:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            vendor(dest, requirement.name, seen)


@pytest.fixture(scope="module")
def docker_program(tmp_path_factory):
    """The test program and the host's ``openai`` package (the task image lacks it), mounted read-only."""
    folder = tmp_path_factory.mktemp("agent")
    folder.chmod(0o755)  # readable by the sandbox's user, another uid
    shutil.copy(PROGRAM / "agent.py", folder / "agent.py")
    vendor(folder / "site", "openai")
    return folder


@pytest.fixture(scope="module")
def docker_backend(docker_program):
    from agentbon.sandbox.docker import DockerBackend

    backend = DockerBackend(SandboxConfig(cpus=1.0, memory="512m", channel=True, agent_dir=str(docker_program)))
    try:
        backend.client.ping()
    except EngineUnavailable as e:
        pytest.skip(f"no Docker engine: {e}")
    labels = {"run_id": "cmdtest"}
    yield backend, labels
    backend.reap(labels)


@pytest.mark.docker
def test_in_docker_the_program_reaches_the_model_only_through_the_proxy(docker_backend, task, spec):
    backend, labels = docker_backend
    gateway = backend.client.api.inspect_network("bridge")["IPAM"]["Config"][0]["Gateway"]
    with socket.create_server(("0.0.0.0", 0)) as listener:  # reachable from any container with a network
        target = f"{gateway}:{listener.getsockname()[1]}"
        socket.create_connection((gateway, listener.getsockname()[1]), timeout=5).close()
        command = f"PROBE={target} PYTHONPATH=$AGENTBON_AGENT_DIR/site python3 $AGENTBON_AGENT_DIR/agent.py"
        config = AgentConfig(type="command", command=command, time_limit_s=120)
        with FakeOpenAIServer(scripted([FIX, "DONE"])) as server, backend.open(task, labels) as box:
            result = make_agent(config).run(task, box, OpenAIClient(server.url, "fake"), spec)
            patch = box.diff()
            mounted = box.exec("touch /agentbon/agent/x", timeout=30, user="root")
    assert mounted.exit_code != 0 and "Read-only file system" in mounted.output
    assert f"probe: blocked {target}" in result.messages[-1]["content"]
    check_fixed_run(result, server, spec, patch)
