"""`agentbon run` through the CLI, with the one factory seam patched to fakes (session Ray)."""

from __future__ import annotations

from pathlib import Path

import pytest
from orch_support import fakes, make_tasks
from typer.testing import CliRunner

from agentbon.cli import app
from agentbon.store import RunStore


def write_suite(tmp_path: Path, ids: list[str]) -> Path:
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(t.model_dump_json() + "\n" for t in make_tasks(tmp_path, ids)))
    return suite


def invoke(*args: str):
    return CliRunner().invoke(app, ["run", *args], catch_exceptions=False)


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
def test_run_then_same_command_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("agentbon.cli.run.make_factories", lambda: fakes(tmp_path, {"a/1": "FIX"}))
    suite = write_suite(tmp_path, ["a", "b"])
    args = [str(suite), "-n", "2", "--run-dir", str(tmp_path / "runs"), "--model", "fake",
            "-c", "select.selectors=[first, oracle]"]
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    assert "4 rollouts planned, 0 already done" in first.output
    assert "plan: 2 tasks x 2" in first.output  # plain progress lines: the runner's stdout is not a terminal
    run_dirs = list((tmp_path / "runs").iterdir())
    assert len(run_dirs) == 1 and run_dirs[0].name.startswith("suite-fake-")
    store = RunStore(run_dirs[0])
    recorded = store.config()
    assert recorded is not None and recorded.n == 2 and recorded.select.selectors == ["first", "oracle"]
    assert store.verdicts("grade")["a/1"].status == "pass"
    again = invoke(*args)
    assert again.exit_code == 0 and "0 rollouts planned, 4 already done" in again.output
    assert sum(store.rollout_counts().values()) == 4


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
def test_two_suites_with_the_same_file_name_are_two_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("agentbon.cli.run.make_factories", lambda: fakes(tmp_path))
    common = ["-n", "1", "--run-dir", str(tmp_path / "runs"), "--model", "fake",
              "-c", "select.selectors=[first, oracle]"]  # fmt: skip
    for folder, ids in (("lite", ["a"]), ("verified", ["a", "b"])):
        (tmp_path / folder).mkdir()
        suite = tmp_path / folder / "test.jsonl"
        suite.write_text("".join(t.model_dump_json() + "\n" for t in make_tasks(tmp_path, ids)))
        result = invoke(str(suite), *common)
        assert result.exit_code == 0 and f"{len(ids)} rollouts planned, 0 already done" in result.output
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2 and all(r.name.startswith("test-fake-") for r in runs)
    assert sorted(len(RunStore(r).tasks()) for r in runs) == [1, 2]


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
def test_a_judge_down_makes_the_run_exit_3_and_the_same_command_selects_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    down = tmp_path / "judge-down"
    down.write_text("b\n")
    monkeypatch.setattr("agentbon.cli.run.make_factories", lambda: fakes(tmp_path, {"b/0": "FIX"}, judge_down=down))
    suite = write_suite(tmp_path, ["a", "b"])
    args = [str(suite), "-n", "1", "--run-dir", str(tmp_path / "runs"), "--model", "fake",
            "-c", "select.selectors=[first, critic, oracle]"]  # fmt: skip
    first = invoke(*args)
    assert first.exit_code == 3, first.output
    assert "infrastructure errors left" in first.output and "1 selection (ServerFailure 1)" in first.output
    down.unlink()
    again = invoke(*args)
    assert again.exit_code == 0, again.output
    assert "0 rollouts planned, 2 already done" in again.output


def test_bad_override_names_the_key(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ["a"])
    result = CliRunner().invoke(app, ["run", str(suite), "-c", "verify.concurrency=lots"])
    assert result.exit_code == 2
    assert "verify.concurrency" in result.output


def test_suite_without_valid_tasks_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"task_id": "x"}\n')
    result = CliRunner().invoke(app, ["run", str(tmp_path / "bad.jsonl"), "--run-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2
    assert "no valid tasks" in result.output and "task error" in result.output


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_endpoint_where_nothing_listens_fails_preflight_and_records_nothing(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ["a", "b"])
    endpoint = f"http://127.0.0.1:{free_port()}/v1"
    result = CliRunner().invoke(app, ["run", str(suite), "-n", "2", "--run-dir", str(tmp_path / "runs"),
                                      "--endpoint", endpoint, "--model", "m"])
    assert result.exit_code == 2, result.output
    assert "preflight failed" in result.output and "[endpoint]" in result.output and endpoint in result.output
    assert not (tmp_path / "runs").exists()


def test_endpoint_given_twice_sets_endpoints_and_each_is_probed(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ["a"])
    first, second = (f"http://127.0.0.1:{free_port()}/v1" for _ in range(2))
    result = CliRunner().invoke(app, ["run", str(suite), "--run-dir", str(tmp_path / "runs"), "--model", "m",
                                      "--endpoint", first, "--endpoint", second])
    assert result.exit_code == 2, result.output
    assert "preflight failed" in result.output and first in result.output and second in result.output
    assert "model.endpoints does not answer" in result.output  # the two URLs became model.endpoints
    assert not (tmp_path / "runs").exists()


def test_endpoint_given_once_is_model_endpoint_and_replaces_a_configured_list(tmp_path: Path) -> None:
    from agentbon.cli.run import endpoint_fields
    from agentbon.config import load_config

    listed = ["model.endpoints=[http://a:1/v1, http://b:1/v1]"]  # as -c gives them
    one = load_config(overrides=listed, model=endpoint_fields(["http://c:1/v1"])).model
    assert one.endpoint == "http://c:1/v1" and one.endpoints == []
    two = load_config(overrides=["model.endpoint=http://a:1/v1"], model=endpoint_fields(["http://c:1/v1", "http://d:1/v1"]))
    assert two.model.endpoints == ["http://c:1/v1", "http://d:1/v1"] and two.model.endpoint is None
    assert endpoint_fields(None) == {}


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
def test_infra_errors_left_exit_3_and_say_how_many_of_what_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("agentbon.cli.run.make_factories", lambda: fakes(tmp_path, {"a/1": "docker-api-error"}))
    suite = write_suite(tmp_path, ["a"])
    args = [str(suite), "-n", "2", "--run-dir", str(tmp_path / "runs"), "--model", "fake",
            "-c", "select.selectors=[first, oracle]", "-c", "infra_retries=0"]
    first = invoke(*args)
    assert first.exit_code == 3, first.output
    assert "infrastructure errors left: 1 rollout (APIError 1)" in first.output
    monkeypatch.setattr("agentbon.cli.run.make_factories", lambda: fakes(tmp_path, {"a/1": "FIX"}))
    again = invoke(*args)
    assert again.exit_code == 0 and "1 rollouts planned, 1 already done" in again.output
