"""`agentbon tasks validate`: gold resolves, empty does not, stable tests; load errors reported, the rest checked."""

from __future__ import annotations

import subprocess
import uuid

import pytest
import yaml
from typer.testing import CliRunner
from verify_task import HIDDEN

from agentbon.cli import app
from agentbon.config import VerifyConfig
from agentbon.verify import TestVerifier
from agentbon.verify.validate import validate_task


def _verifier(backend):
    return TestVerifier(backend, VerifyConfig(timeout_s=60, dedupe=False))


def test_valid_task(calc, fake_backend):
    result = validate_task(calc.task, _verifier(fake_backend), runs=2)
    assert result.status == "valid" and result.problems == []
    assert (result.gold, result.empty, result.evidence) == ("2/2", "0/2", "pass")
    assert fake_backend.opened == 7  # 2 gold runs and their second checks, 2 empty runs, 1 evidence run


def test_flaky_test_is_named_and_its_runs_recorded(calc, fake_backend, tmp_path):
    counter = tmp_path / f"count-{uuid.uuid4().hex}"
    flaky = (
        "import pathlib\n\n\ndef test_sometimes():\n"
        f"    p = pathlib.Path({str(counter)!r})\n"
        "    n = int(p.read_text()) if p.exists() else 0\n    p.write_text(str(n + 1))\n    assert n % 2 == 0\n"
    )
    grade = calc.task.grade.model_copy(
        update={
            "patch": calc.patch({**HIDDEN, "tests/test_flaky.py": flaky}),
            "pass_to_pass": ["tests/test_ops.py::test_mul", "tests/test_flaky.py::test_sometimes"],
        }
    )
    result = validate_task(calc.task.model_copy(update={"grade": grade}), _verifier(fake_backend), runs=3)
    # Flaky alone is not invalid: the suite's flaky map carries it into grading (test_flaky_grading.py).
    assert result.status == "valid" and result.flaky == ["tests/test_flaky.py::test_sometimes"]
    assert result.problems == [
        "1 flaky test(s), kept in the suite's flaky map: grading decides them by verify.flaky (k of m runs by default)"
    ]
    assert result.seen == {"tests/test_flaky.py::test_sometimes": "gold passed, failed, passed; empty failed, passed, failed"}


def test_wrong_gold_and_tests_that_pass_at_base(calc, fake_backend):
    task = calc.task.model_copy(
        update={"grade": calc.task.grade.model_copy(update={"fail_to_pass": ["tests/test_ops.py::test_mul"]})}
    )
    result = validate_task(task, _verifier(fake_backend), runs=1)
    assert "the empty patch resolves the task" in result.problems
    assert "FAIL_TO_PASS tests pass at base: tests/test_ops.py::test_mul" in result.problems
    wrong = calc.task.model_copy(update={"gold_patch": calc.patch({"README.md": "x\n"})})
    result = validate_task(wrong, _verifier(fake_backend), runs=1)
    assert result.status == "invalid" and result.problems[0].startswith("gold patch does not resolve: FAIL_TO_PASS")


def _task_folder(calc, root):
    """The calc task in the agreed folder format (bundle, task.yaml, gold.patch, test.patch)."""
    folder = root / "calc-add"
    folder.mkdir(parents=True)
    subprocess.run(
        ["git", "bundle", "create", str(folder / "repo.bundle"), "--all"],
        cwd=calc.repo,
        check=True,
        capture_output=True,
    )
    (folder / "gold.patch").write_text(calc.task.gold_patch)
    (folder / "test.patch").write_text(calc.task.grade.patch)
    spec = {
        "task_id": "calc-add",
        "kind": "bugfix",
        "problem_statement": calc.task.problem_statement,
        "repo": {"url": "repo.bundle", "base_commit": calc.base},
        "evidence": {"runner": "pytest", "pass_to_pass": calc.task.evidence.pass_to_pass},
        "grade": {
            "runner": "pytest",
            "fail_to_pass": calc.task.grade.fail_to_pass,
            "pass_to_pass": calc.task.grade.pass_to_pass,
            "patch_file": "test.patch",
        },
        "gold_patch_file": "gold.patch",
    }
    (folder / "task.yaml").write_text(yaml.safe_dump(spec))
    broken = root / "broken"
    broken.mkdir()
    for name in ("gold.patch", "test.patch", "repo.bundle"):
        (broken / name).write_bytes((folder / name).read_bytes())
    (broken / "task.yaml").write_text(yaml.safe_dump({**spec, "task_id": "broken", "grade": {"runner": "nose"}}))


def test_cli_reports_load_errors_and_validates_the_rest(calc, tmp_path, monkeypatch):
    suite = tmp_path / "suite"
    _task_folder(calc, suite)
    out = tmp_path / "v.json"
    result = CliRunner().invoke(
        app,
        ["tasks", "validate", str(suite), "--runs", "1", "--backend", "process", "--json", str(out)],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 1, result.output
    assert "failed to load" in result.output and "grade.runner" in result.output
    assert "1 valid, 0 not valid, 1 failed to load" in result.output
    data = yaml.safe_load(out.read_text())
    assert data["results"][0]["status"] == "valid" and data["load_errors"][0]["field"].startswith("grade")


@pytest.mark.docker
def test_a_sandbox_that_does_not_start_is_exit_3_not_an_invalid_task(calc, docker_backend, tmp_path):
    """The task is fine; its sandbox cannot start (an image neither the engine nor a registry has): the task could
    not be checked, which running the same command again may fix (exit 3), not a task to repair (exit 1)."""
    missing = f"agentbon-test-missing/{uuid.uuid4().hex[:8]}:none"
    task = calc.task.model_copy(update={"environment": calc.task.environment.model_copy(update={"image": missing})})
    suite = tmp_path / "suite.jsonl"
    suite.write_text(task.model_dump_json() + "\n")
    result = CliRunner().invoke(app, ["tasks", "validate", str(suite), "--runs", "1"], env={"COLUMNS": "200"})
    assert result.exit_code == 3, result.output
    assert "infra_error" in result.output and "0 valid, 1 not valid" in result.output
    assert "run the same command" in result.output
