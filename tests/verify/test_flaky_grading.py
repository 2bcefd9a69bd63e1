"""Flaky tests in grading: the suite's map is loaded into the test sets, and the verdict decides them k of m, leaves
them out, or (strict) grades them on one run like any test, saying per test which it did (verify/flaky.py)."""

from __future__ import annotations

import json
import shutil
import uuid

import pytest
import yaml
from typer.testing import CliRunner
from verify_task import HIDDEN

from agentbon.cli import app
from agentbon.config import VerifyConfig
from agentbon.tasks import load_suite
from agentbon.types import TestSet
from agentbon.verify import TestVerifier
from agentbon.verify import flaky as fl

FLAKY_ID = "tests/test_flaky.py::test_sometimes"


def counting_test(counter, fails_when: str) -> str:
    """A test that counts its runs in a host file and fails when ``fails_when`` (an expression of n) holds."""
    return (
        "import pathlib\n\n\ndef test_sometimes():\n"
        f"    p = pathlib.Path({str(counter)!r})\n"
        "    n = int(p.read_text()) if p.exists() else 0\n    p.write_text(str(n + 1))\n"
        f"    assert not ({fails_when})\n"
    )


def flaky_task(calc, tmp_path, fails_when: str, role: str = "pass_to_pass"):
    """The calc task with a counting test added to its grade as ``role``, marked flaky as the map would mark it."""
    counter = tmp_path / f"count-{uuid.uuid4().hex}"
    grade = calc.task.grade
    lists = {"fail_to_pass": list(grade.fail_to_pass), "pass_to_pass": list(grade.pass_to_pass)}
    lists[role].append(FLAKY_ID)
    grade = grade.model_copy(
        update={
            "patch": calc.patch({**HIDDEN, "tests/test_flaky.py": counting_test(counter, fails_when)}),
            "files": [*grade.files, "tests/test_flaky.py"],
            "flaky": {FLAKY_ID: "gold passed, failed, passed"},
            **lists,
        }
    )
    return calc.task.model_copy(update={"grade": grade}), counter


def verifier(backend, **flaky):
    return TestVerifier(backend, VerifyConfig(timeout_s=60, dedupe=False, **flaky))


# ------------------------------------------------------------------------------------------------- pure core


def test_treatment_by_mode():
    tests = TestSet(fail_to_pass=["a"], pass_to_pass=["b", "c"], flaky={"c": "seen"})
    assert fl.treatment(tests, "strict", 3).graded == tests and fl.treatment(tests, "strict", 3).notes == {}
    rerun = fl.treatment(tests, "rerun", 3)
    assert rerun.graded.tests == ["a", "b", "c"] and rerun.rerun == ["c"]
    excluded = fl.treatment(tests, "exclude", 3)
    assert excluded.graded.tests == ["a", "b"] and excluded.rerun == [] and excluded.notes == {
        "c": "excluded from the grade"
    }
    assert fl.treatment(tests, "rerun", 1).graded.tests == ["a", "b"]  # one run allowed: nothing to rerun with


def test_exploit_excluding_every_fail_to_pass_would_let_the_empty_patch_resolve():
    tests = TestSet(fail_to_pass=["a"], pass_to_pass=["b"], flaky={"a": "seen", "b": "seen"})
    treat = fl.treatment(tests, "exclude", 3)
    assert treat.graded.fail_to_pass == ["a"] and treat.graded.pass_to_pass == []
    assert treat.rerun == ["a"]  # kept, and decided k of m
    harnessed = fl.treatment(tests.model_copy(update={"runner": "swebench"}), "rerun", 3)
    assert harnessed.graded.fail_to_pass == ["a"] and harnessed.rerun == []
    assert "graded on one run (the harness runs once" in harnessed.notes["a"]
    assert harnessed.notes["b"] == "excluded from the grade"


def test_runs_until_each_flaky_test_is_decided():
    assert fl.undecided([{"a": "passed"}], ["a"], 3, 2) == ["a"]
    assert fl.undecided([{"a": "passed"}, {"a": "passed"}], ["a"], 3, 2) == []
    assert fl.undecided([{"a": "failed"}, {"a": "failed"}], ["a"], 3, 2) == []  # cannot reach 2 in one more run
    decided, notes = fl.decide([{"a": "failed", "b": "passed"}, {"a": "error"}], ["a", "b"], 2)
    assert decided == {"a": "error", "b": "missing"}  # b passed once and never ran again: not passed
    assert notes == {"a": "passed 0 of 2 run(s), 2 needed", "b": "passed 1 of 1 run(s), 2 needed"}
    decided, notes = fl.decide([{"a": "passed"}, {"a": "failed"}, {"a": "passed"}], ["a"], 2)
    assert decided == {"a": "passed"} and notes == {"a": "passed 2 of 3 run(s), 2 needed"}


def test_map_lives_beside_the_suite_and_updates_only_the_tasks_validated(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    assert fl.map_path(suite) == suite / "flaky.json"
    assert fl.map_path(tmp_path / "tasks.jsonl") == tmp_path / "tasks.jsonl.flaky.json"
    where = fl.map_path(suite)
    fl.write_map(where, {"t1": {"x": "a"}, "t2": {"y": "b"}}, 3)
    fl.write_map(where, {"t1": {}, "t3": {"z": "c"}}, 3)  # t1 now stable, t2 not validated this time
    assert fl.read_map(where) == {"t2": {"y": "b"}, "t3": {"z": "c"}}


def test_a_malformed_map_is_a_load_error_naming_the_file(calc, tmp_path):
    suite = tmp_path / "suite"
    folder = _task_folder(calc, suite)
    (suite / "flaky.json").write_text(json.dumps({"tasks": {"calc-add": ["not", "a", "mapping"]}}))
    tasks, errors = load_suite(suite)
    assert [t.task_id for t in tasks] == ["calc-add"]  # the tasks still load
    assert errors[0].source == str(suite / "flaky.json") and "flaky map" in errors[0].problem
    (suite / "flaky.json").write_text(json.dumps({"version": 1, "tasks": {"calc-add": {FLAKY_ID: "seen"}}}))
    tasks, errors = load_suite(folder.parent)
    assert errors == [] and tasks[0].grade.flaky == {}  # a test the task does not grade is not marked
    (suite / "flaky.json").write_text(
        json.dumps({"version": 1, "tasks": {"calc-add": {"tests/test_ops.py::test_mul": "seen"}}})
    )
    tasks, _ = load_suite(suite)
    assert tasks[0].grade.flaky == {"tests/test_ops.py::test_mul": "seen"}
    assert tasks[0].evidence.flaky == {"tests/test_ops.py::test_mul": "seen"}


# ------------------------------------------------------------------------------------------------- verdicts


def test_a_test_failing_one_run_in_three_is_decided_two_of_three(calc, fake_backend, tmp_path):
    task, _ = flaky_task(calc, tmp_path, "n % 3 == 1")
    gold = calc.rollout(task.gold_patch)
    strict = [verifier(fake_backend, flaky="strict").verify(task, gold, "grade") for _ in range(3)]
    assert [v.status for v in strict] == ["pass", "fail", "pass"]  # one run decides: the verdict is noise
    task, _ = flaky_task(calc, tmp_path, "n % 3 == 1")
    verdicts = [verifier(fake_backend).verify(task, gold, "grade") for _ in range(3)]
    assert [v.status for v in verdicts] == ["pass", "pass", "pass"]
    assert verdicts[0].flaky == {FLAKY_ID: "passed 2 of 3 run(s), 2 needed"}
    assert verdicts[0].tests[FLAKY_ID] == "passed"


def test_excluded_flaky_tests_are_not_graded_and_the_verdict_says_so(calc, fake_backend, tmp_path):
    task, counter = flaky_task(calc, tmp_path, "True")  # always fails: only the map keeps it out
    verdict = verifier(fake_backend, flaky="exclude").verify(task, calc.rollout(task.gold_patch), "grade")
    assert verdict.status == "pass" and FLAKY_ID not in verdict.tests
    assert verdict.flaky == {FLAKY_ID: "excluded from the grade"}
    assert not counter.exists()  # not even run


def test_exploit_a_flaky_fail_to_pass_that_passes_at_base_now_and_then_does_not_resolve(calc, fake_backend, tmp_path):
    task, _ = flaky_task(calc, tmp_path, "n % 3 != 0", role="fail_to_pass")  # passes one run in three
    task = task.model_copy(update={"grade": task.grade.model_copy(update={"fail_to_pass": [FLAKY_ID]})})
    empty = calc.rollout("")
    for mode in ("rerun", "exclude"):
        verdict = verifier(fake_backend, flaky=mode).verify(task, empty, "grade")
        assert verdict.status == "fail", (mode, verdict.reason)
        assert verdict.flaky[FLAKY_ID].startswith("passed 1 of 3 run(s)")


def test_no_rerun_when_a_stable_test_already_failed(calc, fake_backend, tmp_path):
    task, counter = flaky_task(calc, tmp_path, "False")
    verdict = verifier(fake_backend).verify(task, calc.rollout(""), "grade")  # the bug is still there
    assert verdict.status == "fail" and verdict.reason.startswith("FAIL_TO_PASS tests/test_hidden.py::test_add")
    assert verdict.flaky == {FLAKY_ID: "not rerun: a stable test did not pass"}
    assert counter.read_text() == "1"


@pytest.mark.parametrize("mode", ["rerun", "exclude"])
def test_the_second_check_leaves_flaky_fail_to_pass_tests_to_their_k_of_m(calc, fake_backend, tmp_path, mode):
    task, _ = flaky_task(calc, tmp_path, "n % 3 == 1", role="fail_to_pass")
    verdict = verifier(fake_backend, flaky=mode).verify(task, calc.rollout(task.gold_patch), "grade")
    assert verdict.status == "pass", verdict.reason
    assert "second check agrees on 1 FAIL_TO_PASS" in verdict.reason  # the stable one only


# ------------------------------------------------------------------------------------------------- the command


def _task_folder(calc, suite):
    from test_task_validation import _task_folder as make

    make(calc, suite)
    shutil.rmtree(suite / "broken")
    return suite / "calc-add"


def test_validate_keeps_the_flaky_tests_in_the_suites_map_and_grading_reads_it(calc, tmp_path):
    suite = tmp_path / "suite"
    folder = _task_folder(calc, suite)
    counter = tmp_path / f"count-{uuid.uuid4().hex}"
    spec = yaml.safe_load((folder / "task.yaml").read_text())
    test_patch = calc.patch({**HIDDEN, "tests/test_flaky.py": counting_test(counter, "n % 2 == 1")})
    (folder / "test.patch").write_text(test_patch)
    spec["grade"]["pass_to_pass"].append(FLAKY_ID)
    (folder / "task.yaml").write_text(yaml.safe_dump(spec))
    result = CliRunner().invoke(
        app, ["tasks", "validate", str(suite), "--runs", "3", "--backend", "process"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output  # flaky alone does not make the task invalid
    assert "flaky map" in result.output
    recorded = json.loads((suite / "flaky.json").read_text())
    assert list(recorded["tasks"]["calc-add"]) == [FLAKY_ID]
    assert recorded["tasks"]["calc-add"][FLAKY_ID].startswith("gold passed, failed, passed; empty ")
    tasks, errors = load_suite(suite)
    assert errors == [] and tasks[0].grade.flaky.keys() == {FLAKY_ID}
