"""A pytest plugin, written into a sandbox, that records every test's outcome by node id (task authoring only).

Authoring runs the repository's own test suite to find which tests a fix turns from failing to passing; it
grades nothing, so it reads pytest's reports directly: ``call`` outcomes, and a ``setup`` that did not pass
(an error or a skip before the test ran); a test with a failed subtest is failed, as the verifier's JUnit
reading has it. The file it writes maps node ids to ``passed``, ``failed``,
``error``, ``skipped``, ``xfailed`` or ``xpassed``; collection errors are listed by file under ``errors``.
"""

PLUGIN = r"""
import json, os

_tests, _errors = {}, []


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if hasattr(report, "wasxfail"):
            outcome = "xpassed" if report.passed else "xfailed"
        elif report.when == "setup" and report.failed:
            outcome = "error"
        else:
            outcome = report.outcome
        if _tests.get(report.nodeid) in ("failed", "error") and outcome == "passed":
            return  # a failed subtest (pytest >= 9 reports each one) stays a failure of its test
        _tests[report.nodeid] = outcome
    elif report.when == "teardown" and report.failed:
        _tests[report.nodeid] = "error"


def pytest_collectreport(report):
    if report.failed:
        _errors.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["AGENTBON_OUTCOMES"], "w") as out:
        json.dump({"tests": _tests, "errors": _errors, "exit": int(exitstatus)}, out)
"""
