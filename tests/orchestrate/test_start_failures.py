"""A part that does not start or join (the model server, the vLLM engines, Ray) ends ``run`` and ``eval`` with one
line naming the part and the fix, and exit code 3 (docs/failure-taxonomy.md, "Exit codes"); each with a real
failing part: a server command that exits at once, an engine interpreter that fails, an address nothing listens on."""

from __future__ import annotations

import dataclasses
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from orch_support import fakes, make_tasks
from typer.testing import CliRunner

from agentbon.cli import app
from agentbon.config import ModelConfig
from agentbon.errors import StartFailure
from agentbon.models.service import ModelService

REPO = Path(__file__).resolve().parents[2]


def failing_python(tmp_path: Path) -> Path:
    """An interpreter that exists and exits at once, as one whose vLLM cannot import does."""
    script = tmp_path / "bin" / "python"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named vllm' >&2\nexit 1\n")
    script.chmod(0o755)
    return script


def write_suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(t.model_dump_json() + "\n" for t in make_tasks(tmp_path, ["a"])))
    return suite


def assert_one_line_exit_3(code: int, output: str, *named: str) -> None:
    """Exit 3, no traceback, and one ``error:`` line that names each of ``named``."""
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert code == 3, output
    assert "Traceback" not in output and len(errors) == 1, output
    for text in named:
        assert text in errors[0], errors[0]


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
def test_a_model_server_that_exits_at_once_ends_the_run_with_exit_3_naming_it_and_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTBON_VLLM_PYTHON", str(failing_python(tmp_path)))
    (tmp_path / "weights").mkdir()
    real_server = dataclasses.replace(fakes(tmp_path), server=ModelService)  # the real service and vLLM launcher
    monkeypatch.setattr("agentbon.cli.run.make_factories", lambda: real_server)
    result = CliRunner().invoke(app, [
        "run", str(write_suite(tmp_path)), "-n", "1", "--run-dir", str(tmp_path / "runs"), "--launcher", "vllm",
        "-c", f"model.path={tmp_path / 'weights'}", "-c", "select.selectors=[first]",
    ])  # fmt: skip
    assert_one_line_exit_3(result.exit_code, result.output, "the model server (vllm) did not start", "No module named vllm", "--endpoint")
    assert ".log" in result.output  # where to read why


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
def test_vllm_engines_whose_interpreter_fails_are_a_start_failure_naming_the_engines(tmp_path: Path) -> None:
    (tmp_path / "weights").mkdir()
    config = ModelConfig(
        launcher="vllm-actors", path=str(tmp_path / "weights"), vllm_python=str(failing_python(tmp_path))
    )
    service = ModelService(config)
    with pytest.raises(StartFailure) as failed:
        service.start()
    assert failed.value.part == "the vLLM engines (vllm-actors)"
    assert "\n" not in str(failed.value) and "model.vllm_python" in failed.value.fix
    service.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# The CLI in a process of its own (the test session's Ray is up, and a process joins one cluster at most), with the
# one factory seam set to fakes: Ray is the real part that fails.
DRIVER = """
import functools, sys
import agentbon.cli.eval, agentbon.cli.run
from agentbon.cli import app
from agentbon.orchestrate import Factories
from agentbon.testing import FakeAgent, FakeBackend, FakeSelector, FakeService, FakeVerifier, no_report, planned_model
factories = Factories(
    backend=functools.partial(FakeBackend, root=sys.argv[1]), agent=FakeAgent, model=planned_model,
    verifier=FakeVerifier, selector=FakeSelector, server=FakeService, report=no_report,
)
agentbon.cli.run.make_factories = agentbon.cli.eval.make_factories = lambda: factories
app(sys.argv[2:])
"""


@pytest.mark.parametrize("command", ["run", "eval"])
def test_a_ray_address_where_nothing_listens_ends_the_command_with_exit_3_at_once(tmp_path: Path, command: str) -> None:
    address = f"127.0.0.1:{free_port()}"
    suite = write_suite(tmp_path)
    args = [command, str(suite), "--ray-address", address, "--run-dir", str(tmp_path / "runs")]
    if command == "eval":
        preds = tmp_path / "preds.jsonl"
        preds.write_text('{"instance_id": "a", "model_name_or_path": "m", "model_patch": "diff"}\n')
        args += ["--predictions", str(preds)]
    else:
        args += ["-n", "1", "--model", "fake", "-c", "select.selectors=[first]"]
    # Ray itself retries a join for minutes; the timeout only keeps a regression from hanging the suite.
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, str(tmp_path / "sandboxes"), *args],
        capture_output=True, text=True, cwd=REPO, timeout=240,
    )  # fmt: skip
    assert_one_line_exit_3(result.returncode, result.stdout + result.stderr, "Ray", address, "ray start")
