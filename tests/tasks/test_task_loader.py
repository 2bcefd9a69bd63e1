"""Task loading: folder suites, JSONL records, SWE-bench instances, and every kind of malformed task."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentbon.errors import TaskError
from agentbon.swebench import instance_image
from agentbon.tasks import SuiteError, load_suite, load_task, raise_on_errors
from agentbon.types import TaskLoadError

FIXTURES = Path(__file__).parent / "fixtures"
BASE = "fb1bd602393a13a8234a45301b5c6d2887b988e5"


def by_field(errors: list[TaskLoadError]) -> dict[tuple[str, str], str]:
    """Errors keyed by (task folder or file:line, field)."""
    out = {}
    for e in errors:
        source = Path(e.source.split(":")[0]).parent.name if "task.yaml" in e.source else Path(e.source).name
        out[(source, e.field)] = e.problem
    return out


# ------------------------------------------------------------------------------------------ folders


def test_folder_suite_loads_every_task_with_files_read_and_paths_resolved():
    tasks, errors = load_suite(FIXTURES / "folder_suite")
    assert errors == []
    assert [t.task_id for t in tasks] == ["fix-migration", "fix-ok"]
    ok = tasks[1]
    assert ok.kind == "bugfix" and ok.difficulty == "easy"
    assert ok.repo.base_commit == BASE
    assert Path(ok.repo.url) == (FIXTURES / "repo.bundle").resolve()
    assert ok.grade.patch == (FIXTURES / "folder_suite/fix-ok/test.patch").read_text()
    assert ok.grade.files == ["tests/test_hidden_add.py"]
    assert ok.grade.fail_to_pass == ["tests/test_hidden_add.py::test_add_positive"]
    assert ok.evidence.pass_to_pass == ["tests/test_calc.py::test_zero"] and ok.evidence.patch == ""
    assert ok.gold_patch is not None and "+    return a + b" in ok.gold_patch
    assert ok.source.endswith("fix-ok/task.yaml")


def test_migration_evidence_may_be_omitted_when_it_is_the_grade():
    task = load_task(FIXTURES / "folder_suite/fix-migration")
    assert task.evidence_is_grade and task.evidence_tests is task.grade
    assert task.gold_patch is None


def test_a_single_task_yaml_loads_the_same_as_its_folder():
    assert load_task(FIXTURES / "folder_suite/fix-ok/task.yaml") == load_task(FIXTURES / "folder_suite/fix-ok")


def test_broken_suite_reports_file_field_and_problem_for_each_and_still_loads_the_good_one():
    tasks, errors = load_suite(FIXTURES / "broken_suite")
    assert [t.task_id for t in tasks] == ["ok-task"]
    found = by_field(errors)
    assert "invalid YAML at line 3" in found[("bad-yaml", "(record)")]
    assert found[("missing-field", "problem_statement")] == "missing required field"
    assert "valid list" in found[("wrong-type", "grade.fail_to_pass")]
    assert found[("unknown-field", "grade.fail_to_pas")].startswith("unknown field (known fields: command,")
    assert "file not found" in found[("missing-patch", "grade.patch_file")]
    assert "test.patch" in found[("missing-patch", "grade.patch_file")]
    assert "not found" in found[("missing-bundle", "repo.url")]
    assert "'id-mismatch'" in found[("id-mismatch", "task_id")]
    assert found[("bad-test-id", "grade.fail_to_pass[1]")] == "blank test id"
    assert found[("no-spec", "task.yaml")] == "task folder has no task.yaml"
    assert len(errors) == 9, "\n".join(map(str, errors))


def test_every_error_names_a_real_file():
    _, errors = load_suite(FIXTURES / "broken_suite")
    for error in errors:
        assert Path(error.source).exists(), error


@pytest.mark.parametrize(
    ("edit", "field", "problem"),
    [
        ({"task_id": "../escape"}, "task_id", "not a safe path segment"),
        ({"repo": {"url": "../../repo.bundle", "base_commit": ""}}, "repo.base_commit", "missing"),
        ({"repo": {"url": "../../repo.bundle", "base_commit": "--upload-pack=x"}}, "repo.base_commit", "not a commit"),
        ({"repo": {"url": "../../repo.bundle"}}, "repo.base_commit", "missing required field"),
        ({"grade": {"fail_to_pass": ["-x"]}}, "grade.fail_to_pass[0]", "runner option"),
        ({"grade": {"fail_to_pass": ["t::a"], "pass_to_pass": ["t::a"]}}, "grade.pass_to_pass", "both"),
        ({"grade": {"fail_to_pass": [3]}}, "grade.fail_to_pass.0", "valid string"),
        ({"grade": {}}, "grade", "no tests to grade with"),
        ({"grade": {"runner": "command"}}, "grade.command", "needs one"),
        ({"grade": {"pass_to_pass": ["t::a"], "patch": "just words"}}, "grade.patch", "not a unified diff"),
        ({"grade": {"pass_to_pass": ["t::a"], "patch": "x", "patch_file": "test.patch"}}, "grade.patch_file", "both"),
        ({"kind": "feature"}, "kind", "Input should be"),
        ({"version": 99}, "version", "newer"),
        ({"problem_statement": "  "}, "problem_statement", "empty"),
        ({"environment": {"env": {"1X": "a"}}}, "environment.env", "not a variable name"),
        ({"environment": {"env": {"PYTEST_ADDOPTS": "-p x"}}}, "environment.env", "dropped by the verifier"),
        ({"environment": {"env": {"X": 3}}}, "environment.env.X", "valid string"),
    ],
)
def test_each_field_problem_is_reported_where_it_is(tmp_path, edit, field, problem):
    folder = tmp_path / "suite" / "t-1"
    shutil.copytree(FIXTURES / "folder_suite/fix-ok", folder)
    spec = {"task_id": "t-1", "problem_statement": "p", "repo": {"url": "../../repo.bundle", "base_commit": BASE}}
    spec["grade"] = {"pass_to_pass": ["tests/test_calc.py::test_zero"]}
    spec.update(edit)
    (folder / "task.yaml").write_text(json.dumps(spec))  # JSON is YAML
    shutil.copy(FIXTURES / "repo.bundle", tmp_path / "repo.bundle")
    tasks, errors = load_suite(tmp_path / "suite")
    assert tasks == []
    assert any(e.field == field and problem in e.problem for e in errors), errors
    assert all(e.source == str(folder / "task.yaml") for e in errors)


def test_missing_path_and_unknown_suffix_and_empty_dir(tmp_path):
    assert load_suite(tmp_path / "nope")[1][0].problem == "no such file or directory"
    (tmp_path / "tasks.csv").write_text("a,b\n")
    assert "not a task suite" in load_suite(tmp_path / "tasks.csv")[1][0].problem
    (tmp_path / "empty").mkdir()
    assert load_suite(tmp_path / "empty") == (
        [],
        [TaskLoadError(source=str(tmp_path / "empty"), field="(record)", problem="no tasks found")],
    )


def test_yaml_that_is_not_a_mapping(tmp_path):
    (tmp_path / "task.yaml").write_text("- a\n- b\n")
    (error,) = load_suite(tmp_path / "task.yaml")[1]
    assert error.field == "(record)" and "mapping" in error.problem


# -------------------------------------------------------------------------------------------- JSONL


def test_jsonl_records_load_with_repo_paths_resolved_against_the_file():
    tasks, errors = load_suite(FIXTURES / "records.jsonl")
    assert errors == []
    assert [t.task_id for t in tasks] == ["rec-one", "rec-two"]
    assert Path(tasks[0].repo.url) == (FIXTURES / "repo.bundle").resolve()
    assert tasks[0].grade.files == ["tests/test_hidden_add.py"]
    assert tasks[1].difficulty == "hard"
    assert tasks[0].source == f"{FIXTURES / 'records.jsonl'}:1"


def test_a_bad_jsonl_line_is_reported_with_its_line_and_the_others_load():
    tasks, errors = load_suite(FIXTURES / "records_broken.jsonl")
    assert [t.task_id for t in tasks] == ["rec-good-1", "rec-good-2"]
    where = {(e.source.rsplit(":", 1)[1], e.field): e.problem for e in errors}
    assert where[("2", "(record)")].startswith("invalid JSON at column")
    assert where[("3", "task_id")].startswith("duplicate task id 'rec-good-1' (first loaded from ")
    assert where[("4", "gold_pach")].startswith("unknown field")
    assert where[("5", "(record)")] == "must be a JSON object, got list"
    assert "not found" in where[("6", "repo.url")]
    assert len(errors) == 5


# ---------------------------------------------------------------------------------------- SWE-bench


def test_swebench_json_list_with_list_and_string_test_fields():
    tasks, errors = load_suite(FIXTURES / "swebench.json")
    assert errors == []
    listy, stringy = tasks
    assert (
        listy.grade.fail_to_pass
        == stringy.grade.fail_to_pass
        == ["tests/test_core.py::test_wrap_collapses_runs_of_spaces"]
    )
    assert listy.grade.pass_to_pass == stringy.grade.pass_to_pass == listy.evidence.pass_to_pass
    assert listy.evidence.fail_to_pass == [] and listy.evidence.patch == ""
    assert stringy.difficulty == "<15 min fix" and listy.difficulty is None
    assert stringy.source == f"{FIXTURES / 'swebench.json'}[1]"


def test_swebench_mapping():
    task = load_task(FIXTURES / "swebench_one.json")
    assert task.task_id == "example__textwrap2-301" and task.kind == "swebench"
    assert task.repo.url == "https://github.com/example/textwrap2.git"
    assert task.repo.base_commit == "0123456789abcdef0123456789abcdef01234567"
    assert task.environment.image == "swebench/sweb.eval.x86_64.example_1776_textwrap2-301:latest"
    assert task.environment.workdir == "/testbed"
    assert task.grade.files == ["tests/test_core.py", "tests/data/wide.txt"]
    assert task.gold_patch is not None and task.gold_patch.startswith("diff --git a/src/textwrap2/core.py")
    assert task.hints.startswith("Probably")
    assert task.metadata == {
        "repo": "example/textwrap2",
        "version": "1.2",
        "created_at": "2023-05-01T10:00:00Z",
        "environment_setup_commit": "89abcdef0123456789abcdef0123456789abcdef",
    }


def test_instance_image_name_is_lower_case_with_the_double_underscore_spelt_out():
    assert instance_image("Django__django-11099") == "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"


def test_swebench_jsonl_reports_bad_instances_by_line_and_key():
    tasks, errors = load_suite(FIXTURES / "swebench.jsonl")
    assert [t.task_id for t in tasks] == ["example__textwrap2-201", "example__textwrap2-202"]
    where = {(e.source.rsplit(":", 1)[1], e.field): e.problem for e in errors}
    assert where[("3", "FAIL_TO_PASS")].startswith("a string here must be a JSON list")
    assert where[("4", "base_commit")].startswith("missing required SWE-bench field")
    assert where[("5", "PASS_TO_PASS[1]")] == "must be a non-empty string, got ''"
    assert len(errors) == 3


# ------------------------------------------------------------------------------------------ strict


def test_raise_on_errors_lists_every_error():
    _, errors = load_suite(FIXTURES / "broken_suite")
    with pytest.raises(SuiteError) as info:
        raise_on_errors(errors)
    assert info.value.errors == errors
    assert str(info.value).startswith("9 malformed task(s):")
    assert isinstance(info.value, TaskError) and isinstance(info.value, ValueError)
    raise_on_errors([])


def test_load_task_raises_on_a_malformed_task_and_on_a_suite():
    with pytest.raises(SuiteError, match="id-mismatch"):
        load_task(FIXTURES / "broken_suite/id-mismatch")
    with pytest.raises(TaskError, match="expected one task, found 2"):
        load_task(FIXTURES / "folder_suite")
