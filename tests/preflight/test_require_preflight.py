"""``require_preflight``: one error listing every fatal problem, warnings returned, nothing recorded."""

from __future__ import annotations

import importlib.util

import pytest

from agentbon.config import RunConfig
from agentbon.errors import ConfigError
from agentbon.orchestrate.factories import Factories
from agentbon.preflight import CHECKS, PreflightError, Problem, preflight, require_preflight
from agentbon.testing import FakeBackend, FakeService, planned_model
from tests.preflight.pf_support import make_task


def test_every_failed_check_is_listed_in_one_error_and_nothing_is_recorded(monkeypatch, tmp_path, closed_port):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    run_dir = tmp_path / "runs"
    config = RunConfig(run_dir=str(run_dir), model={"endpoint": f"http://127.0.0.1:{closed_port}/v1"})
    with pytest.raises(PreflightError) as caught:
        require_preflight(config, [make_task()])
    error = caught.value
    assert isinstance(error, ConfigError)  # the CLI's exit 2
    assert [p.check for p in error.problems] == ["engine", "endpoint"]
    text = str(error)
    assert "2 problems" in text and "no-docker.sock" in text and str(closed_port) in text and text.count("fix:") == 2
    assert not run_dir.exists()


def test_warnings_do_not_stop_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBON_HOME", str(tmp_path / "home"))  # uncached default weights: a warning
    config = RunConfig(run_dir=str(tmp_path), model={"launcher": "llama-cpp"})
    fakes = Factories(backend=FakeBackend)
    if importlib.util.find_spec("llama_cpp") is None:  # then the one fatal problem is the missing extra
        with pytest.raises(PreflightError) as caught:
            require_preflight(config, [make_task()], fakes)
        assert [p.cause.split(":")[0] for p in caught.value.problems] == ["model.launcher=llama-cpp"]
        return
    [warning] = require_preflight(config, [make_task()], fakes)
    assert not warning.fatal and "agentbon model fetch" in warning.fix


def test_a_run_of_fakes_passes(tmp_path):
    fakes = Factories(backend=FakeBackend, model=planned_model, server=FakeService)
    config = RunConfig(run_dir=str(tmp_path), model={"endpoint": "http://127.0.0.1:9/v1"})
    assert require_preflight(config, [make_task()], fakes) == []


def test_checks_run_one_by_one_by_name(tmp_path):
    assert list(CHECKS) == [
        "budget", "engine", "limits", "network", "images", "disk", "extras", "settings", "harness", "agent", "endpoint",
        "logprobs", "command",
    ]  # fmt: skip
    assert preflight(RunConfig(run_dir=str(tmp_path)), [], checks=["disk"]) == []


def test_a_problem_reads_as_cause_then_fix():
    problem = Problem(check="disk", cause="run_dir x: 0.10 GiB free", fix="free 1 GiB")
    assert str(problem) == "[disk] run_dir x: 0.10 GiB free\n    fix: free 1 GiB"
