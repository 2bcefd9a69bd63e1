"""Which SWE-bench instances and ids the second check drives, and the eval script's setup part it runs."""

from __future__ import annotations

import pytest

from agentbon.types import TestSet
from agentbon.verify import harness, second
from agentbon.verify.evalscript import setup_part
from tests.swebench.families import PYTEST, eval_script
from tests.swebench.support import harness_or_skip


def _swebench(parser: str, f2p: list[str]) -> TestSet:
    return TestSet(runner="swebench", fail_to_pass=f2p, eval_script="x", log_parser=parser)


@pytest.mark.parametrize(
    ("parser", "driven"),
    [
        ("parse_log_pytest", "pytest"),
        ("parse_log_flask", "pytest"),  # an alias of parse_log_pytest
        ("parse_log_pytest_options", "pytest"),
        ("parse_log_requests", "pytest"),
        ("parse_log_astropy", "pytest"),  # parse_log_pytest_v2
        ("parse_log_matplotlib", "pytest-plain"),  # rewrites parameters: only ids without them are node ids
        ("parse_log_seaborn", "pytest"),
        ("parse_log_django", "django"),
        ("parse_log_sympy", "sympy"),
        ("parse_log_jest", None),  # another language's runner
    ],
)
def test_the_second_runner_by_parser(parser, driven):
    harness_or_skip()
    tests = _swebench(parser, [])
    assert harness.second_runner(tests) == driven
    assert harness.pytest_family(tests) is (driven in ("pytest", "pytest-plain"))


@pytest.mark.parametrize(
    ("test_id", "exact"),
    [
        ("tests/test_ops.py::test_add", True),
        ("tests/test_ops.py::TestOps::test_zero", True),
        ("pkg/tests/test_m.py::test_p[1-2]", True),
        ("pkg/tests/test_m.py::test_p[a b]", True),
        ("pkg/tests/test_m.py::test_p[log(photon", False),  # cut off inside its parameters
        ("pkg/tests/test_m.py::test_p[/tmp/x.fits]", False),  # shortened by parse_log_pytest_options
        ("test_area (shapes.tests.AreaTests)", False),  # Django's form
        ("test_gcd_negative", False),  # SymPy's form
        ("tests/test_ops.py", False),
        ("[100%]", False),
    ],
)
def test_exact_pytest_ids(test_id, exact):
    assert second.exact_pytest_id(test_id) is exact


def test_ids_to_check_for_a_harness_instance():
    tests = _swebench("parse_log_pytest", ["tests/a.py::test_x", "tests/a.py::test_y", "tests/a.py::test_z[cut"])
    outcomes = {"tests/a.py::test_x": "passed", "tests/a.py::test_y": "failed", "tests/a.py::test_z[cut": "passed"}
    assert second.ids_to_check(tests, outcomes, "pytest") == ["tests/a.py::test_x"]
    assert second.ids_to_check(tests, outcomes, None) == []  # a parser that is not pytest's: not driven
    assert second.ids_to_check(tests, outcomes) == []  # "swebench" itself is not a runner the driver knows
    spec = second.spec(tests, ["tests/a.py::test_x"], "n", 10, [], True, runner="pytest")
    assert spec["runner"] == "pytest" and spec["ids"] == ["tests/a.py::test_x"]


def test_setup_part_is_everything_before_the_test_command():
    patch = "diff --git a/tests/t.py b/tests/t.py\n--- a/tests/t.py\n+++ b/tests/t.py\n@@ -1 +1,2 @@\n x\n+y\n"
    script = eval_script("abc123", patch, PYTEST.test_command, PYTEST.directives)
    setup = setup_part(script)
    assert setup is not None and setup.endswith("\n")
    lines = setup.rstrip("\n").split("\n")
    assert lines[:3] == ["#!/bin/bash", "set -uxo pipefail", "source /opt/miniconda3/bin/activate"]
    assert "conda activate testbed" in lines and "git checkout abc123 tests/t.py" in lines
    assert lines[-1] == "EOF_114329324912" and "+y" in lines  # ends with the test patch's heredoc
    assert "Start Test Output" not in setup and "pytest -rA" not in setup
    assert setup_part("echo no markers\n") is None


@pytest.mark.parametrize(
    ("test_id", "label"),
    [
        ("test_area (shapes.tests.AreaTests)", "shapes.tests.AreaTests.test_area"),
        ("test_area (shapes.tests.AreaTests.test_area)", "shapes.tests.AreaTests.test_area"),  # Python 3.11+ form
        ("Regression test for #12345.", None),  # a docstring line the harness keeps as an id
        ("test_area (shapes.tests.AreaTests) ... ok", None),
        ("tests/test_ops.py::test_add", None),
    ],
)
def test_django_ids_become_runtests_labels(test_id, label):
    assert second.django_label(test_id) == label


def test_which_ids_each_harness_runner_checks():
    f2p = ["test_a (app.tests.T)", "Docstring line.", "test_b", "t/test_m.py::test_p[x]", "t/test_m.py::test_q"]
    outcomes = dict.fromkeys(f2p, "passed")
    checked = {runner: second.ids_to_check(_swebench("x", f2p), outcomes, runner) for runner in second.RUNNERS}
    assert checked["django"] == ["test_a (app.tests.T)"]
    assert checked["sympy"] == ["test_b"]
    assert checked["pytest"] == ["t/test_m.py::test_p[x]", "t/test_m.py::test_q"]
    assert checked["pytest-plain"] == ["t/test_m.py::test_q"]
    assert checked["unittest"] == []  # no harness parser is driven that way
    assert second.ids_to_check(_swebench("x", f2p), outcomes, None) == []


def test_the_spec_takes_what_each_runner_needs_from_the_test_command():
    tests = _swebench("x", [])
    django = second.spec(
        tests, ["test_a (app.tests.T)"], "n", 10, [], True, runner="django",
        command="./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 app.tests",
    )  # fmt: skip
    assert django["runner"] == "django" and django["ids"] == ["app.tests.T.test_a"]
    assert django["settings"] == "test_sqlite"
    sympy = second.spec(
        tests, ["test_b"], "n", 10, [], True, runner="sympy",
        command="PYTHONWARNINGS='ignore::UserWarning' bin/test -C --verbose sympy/core/tests/test_a.py sympy/x/t.py",
    )  # fmt: skip
    assert sympy["files"] == ["sympy/core/tests/test_a.py", "sympy/x/t.py"] and sympy["no_cache"] is True
    plain = second.spec(tests, ["t/test_m.py::test_q"], "n", 10, [], True, runner="pytest-plain")
    assert plain["runner"] == "pytest"
