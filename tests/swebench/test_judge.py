"""agentbon's verdict on a harness log equals what swebench's own grading functions say on the same log."""

from __future__ import annotations

import pytest

from agentbon.errors import MissingExtra
from agentbon.swebench import task_from_instance
from agentbon.verify import harness
from tests.swebench.families import FAMILIES, build
from tests.swebench.support import harness_or_skip

F2P, P2P_ZERO, P2P_ID, P2P_MUL, P2P_NEW = [*FAMILIES["pytest"].fail_to_pass, *FAMILIES["pytest"].pass_to_pass]


def _log(body: str, exit_code: int | None) -> str:
    tail = "" if exit_code is None else f"+ SWEBENCH_TEST_EXIT_CODE={exit_code}\n"
    end = "+ : '>>>>> End Test Output'\n"
    code = (
        "" if exit_code is None else f"+ echo '>>>>> Test Exit Code: {exit_code}'\n>>>>> Test Exit Code: {exit_code}\n"
    )
    return f"+ git apply -v -\nChecking patch tests/test_ops.py...\n+ : '>>>>> Start Test Output'\n+ pytest -rA\n{body}{tail}{end}{code}"


def _summary(**status: str) -> str:
    return "".join(f"{s} {t}\n" for t, s in status.items())


ALL_PASS = {F2P: "PASSED", P2P_ZERO: "PASSED", P2P_ID: "PASSED", P2P_MUL: "PASSED", P2P_NEW: "PASSED"}
LOGS = {
    "resolved": _log(_summary(**ALL_PASS), 0),
    "f2p failed": _log(_summary(**{**ALL_PASS, F2P: "FAILED"}), 1),
    "f2p skipped": _log(_summary(**{**ALL_PASS, F2P: "SKIPPED"}), 0),
    "p2p skipped (the harness maintains it)": _log(_summary(**{**ALL_PASS, P2P_MUL: "SKIPPED"}), 0),
    "p2p missing": _log(_summary(**{k: v for k, v in ALL_PASS.items() if k != P2P_NEW}), 0),
    "exit code contradicts a clean log": _log(_summary(**ALL_PASS), 1),
    "patch apply failed": ">>>>> Patch Apply Failed\n" + _log(_summary(**ALL_PASS), 0),
    "no markers": "bash: pytest: command not found\n",
    "no exit code recorded": _log(_summary(**ALL_PASS), None),
}


@pytest.fixture
def pytest_family(tmp_path, mirror):
    harness_or_skip()
    made = build(FAMILIES["pytest"], mirror, tmp_path / "scratch")
    return made, task_from_instance(made.record, "fixture")


@pytest.mark.parametrize("case", list(LOGS))
def test_verdict_equals_the_harness_on_the_same_log(case, pytest_family, tmp_path):
    from swebench.harness.grading import get_eval_report
    from swebench.harness.utils import make_test_spec

    made, task = pytest_family
    log = LOGS[case]
    path = tmp_path / "test_output.txt"
    path.write_text(log)
    spec = make_test_spec(made.record)  # the dataset record itself, not agentbon's copy of it
    prediction = {"instance_id": spec.instance_id, "model_name_or_path": "m", "model_patch": made.gold}
    official = get_eval_report(spec, prediction, str(path), include_tests_status=True)[spec.instance_id]
    judged = harness.judge(task, task.grade, made.gold, log)
    status = judged.status
    assert status == ("pass" if official["resolved"] else "fail"), judged.reason
    assert judged.log == log[-4000:]
    expected = {"resolved": "pass", "p2p skipped (the harness maintains it)": "pass", "no exit code recorded": "pass"}
    assert status == expected.get(case, "fail")  # the cases mean what they say


def test_outcomes_and_reasons(pytest_family):
    _, task = pytest_family
    judged = harness.judge(task, task.grade, "", LOGS["f2p failed"])
    assert (judged.status, judged.reason) == ("fail", f"FAIL_TO_PASS {F2P} failed")
    assert judged.runner_exit_code == 1
    assert judged.tests == {
        F2P: "failed",
        P2P_ZERO: "passed",
        P2P_ID: "passed",
        P2P_MUL: "passed",
        P2P_NEW: "passed",
    }
    missing = harness.judge(task, task.grade, "", LOGS["p2p missing"])
    assert missing.reason == f"PASS_TO_PASS {P2P_NEW} missing" and (missing.tests or {})[P2P_NEW] == "missing"
    reason = harness.judge(task, task.grade, "", LOGS["exit code contradicts a clean log"]).reason
    assert reason == "not trusted: the test command exited 1 but its log records no failure"
    reason = harness.judge(task, task.grade, "", LOGS["patch apply failed"]).reason
    assert reason == "the harness log says a patch did not apply"
    reason = harness.judge(task, task.grade, "", LOGS["no markers"]).reason
    assert reason.startswith("no test output markers in the log")


def test_eval_script_is_the_harness_script_with_the_exit_code_recorded(pytest_family):
    made, task = pytest_family
    script = harness.eval_script(task, task.grade)
    assert made.record["eval_script"].strip().split("\n")[2:] == [
        line for line in script.strip().split("\n")[2:] if "SWEBENCH_TEST_EXIT_CODE" not in line
    ]
    assert "SWEBENCH_TEST_EXIT_CODE=$?" in script
    assert harness.check(task.grade) == ""
    assert "PARSER_REGISTRY" in harness.check(task.grade.model_copy(update={"log_parser": "parse_log_nope"}))


def test_without_the_extra_the_message_names_it(monkeypatch):
    harness.swebench.cache_clear()
    monkeypatch.setitem(__import__("sys").modules, "swebench", None)
    try:
        with pytest.raises(MissingExtra, match=r"pip install 'agentbon\[swebench\]'"):
            harness.swebench()
    finally:
        harness.swebench.cache_clear()
