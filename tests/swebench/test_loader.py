"""Loading SWE-bench-format instances: the harness's fields, evidence before the test patch, mirrors, environments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentbon.swebench import MIRROR_ENV, repo_url
from agentbon.tasks import load_suite
from agentbon.types import Environment
from tests.swebench.families import FAMILIES


def _load(tmp_path: Path, *records: dict):
    file = tmp_path / "instances.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in records))
    return load_suite(file)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_instance_with_an_eval_script_is_graded_by_the_harness(name, built, tmp_path, mirror):
    made = built(name)
    (task,), errors = _load(tmp_path, made.record)
    assert errors == []
    family = made.family
    assert task.grade.runner == task.evidence.runner == "swebench"
    assert task.grade.eval_script == made.record["eval_script"] and task.grade.patch == made.test_patch
    assert (task.grade.fail_to_pass, task.grade.pass_to_pass) == (family.fail_to_pass, family.pass_to_pass)
    assert task.grade.log_parser == task.evidence.log_parser == family.log_parser
    assert task.grade.eval_type == "pass_and_fail"
    # evidence: the PASS_TO_PASS tests that exist before the test patch, run by a script that does not apply it
    assert task.evidence.fail_to_pass == [] and task.evidence.pass_to_pass == family.evidence
    assert sorted(task.evidence.left_out) == sorted(set(family.pass_to_pass) - set(family.evidence))
    assert "EOF_114329324912" not in task.evidence.eval_script and task.evidence.patch == ""
    # the repository comes from the mirror, and the instance's environment is built (no prebuilt image)
    assert task.repo.url == str(mirror / family.repo)
    assert task.environment.image is None and task.environment.workdir == "/testbed"
    assert task.environment.setup == made.record["environment"]["setup"]


def test_prebuilt_image_from_the_instance_and_no_eval_script_keeps_the_pytest_runner(built, tmp_path):
    record = built("pytest", environment=False).record
    (task,), _ = _load(tmp_path, record)
    assert task.environment == Environment(image=record["image"], workdir="/testbed")
    classic = {k: v for k, v in record.items() if k not in ("eval_script", "log_parser", "eval_type", "image")}
    (task,), _ = _load(tmp_path, classic)
    assert task.grade.runner == task.evidence.runner == "pytest" and task.grade.eval_script == ""
    assert task.environment.image == "swebench/sweb.eval.x86_64.fixture_1776_calc-1:latest"
    assert task.evidence.pass_to_pass == FAMILIES["pytest"].evidence  # the same evidence rule without a script


def test_an_instance_without_eval_script_whose_ids_pytest_cannot_run_is_refused(built, tmp_path):
    record = built("django").record
    classic = {k: v for k, v in record.items() if k not in ("eval_script", "log_parser", "eval_type")}
    tasks, [error] = _load(tmp_path, classic)
    assert tasks == [] and error.field == "FAIL_TO_PASS"
    assert "is not a pytest node id, and the instance has no eval_script" in error.problem
    bare = {**classic, "FAIL_TO_PASS": ["tests/test_x.py::test_y[a b]"], "PASS_TO_PASS": ["test_bare_name"]}
    _, [error] = _load(tmp_path, bare)
    assert error.field == "PASS_TO_PASS" and "'test_bare_name'" in error.problem


def test_bad_swebench_fields_are_named(built, tmp_path):
    record = built("django").record
    _, errors = _load(
        tmp_path,
        {**record, "environment": {"setup": "not a list"}},
        {**record, "instance_id": "b-2", "environment": {"imagee": "x"}},
        {**record, "instance_id": "b-3", "log_parser": ""},
        {**record, "instance_id": "b-4", "log_parser": 7},
    )
    fields = sorted((e.source.rsplit(":", 1)[1], e.field) for e in errors)
    assert fields == [
        ("1", "environment.setup"),
        ("2", "environment.imagee"),
        ("3", "log_parser"),
        ("4", "log_parser"),
    ]


def test_mirror_setting(monkeypatch):
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    assert repo_url("django/django") == "https://github.com/django/django.git"
    monkeypatch.setenv(MIRROR_ENV, "/srv/mirrors/")
    assert repo_url("django/django") == "/srv/mirrors/django/django"
    monkeypatch.setenv(MIRROR_ENV, "https://git.internal/{owner}/{name}.git")
    assert repo_url("django/django") == "https://git.internal/django/django.git"
    monkeypatch.setenv(MIRROR_ENV, "/srv/{nope}")
    with pytest.raises(ValueError, match="placeholders"):
        repo_url("django/django")


def test_missing_mirror_checkout_is_a_load_error(tmp_path, built, monkeypatch):
    record = built("sympy").record
    monkeypatch.setenv(MIRROR_ENV, str(tmp_path / "elsewhere"))
    _, (error,) = _load(tmp_path, record)
    assert error.field == "repo.url" and "not found" in error.problem


def test_own_task_evidence_loses_the_tests_its_grade_patch_brings(tmp_path):
    patch = (
        "diff --git a/tests/test_a.py b/tests/test_a.py\n--- a/tests/test_a.py\n+++ b/tests/test_a.py\n"
        "@@ -1,2 +1,5 @@\n def test_old():\n     pass\n+\n+def test_new():\n+    pass\n"
    )
    record = {
        "task_id": "own",
        "problem_statement": "p",
        "repo": {"url": "https://example.com/r.git", "base_commit": "abc"},
        "evidence": {"pass_to_pass": ["tests/test_a.py::test_old", "tests/test_a.py::test_new"]},
        "grade": {"fail_to_pass": ["tests/test_a.py::test_new"], "pass_to_pass": ["tests/test_a.py::test_old"],
                  "patch": patch},
    }  # fmt: skip
    (task,), errors = _load(tmp_path, record)
    assert errors == []
    assert task.evidence.pass_to_pass == ["tests/test_a.py::test_old"]
    assert task.evidence.left_out == {
        "tests/test_a.py::test_new": "test_new is defined by the test patch (in tests/test_a.py), not before it"
    }
    # the same tests as the evidence's own patch brings them: kept
    record["evidence"]["patch"] = patch
    (task,), _ = _load(tmp_path, record)
    assert task.evidence.pass_to_pass == ["tests/test_a.py::test_old", "tests/test_a.py::test_new"]
    assert task.evidence.left_out == {}
