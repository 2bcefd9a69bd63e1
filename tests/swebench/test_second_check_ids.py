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
        ("parse_log_pytest", True),
        ("parse_log_flask", True),  # an alias of parse_log_pytest
        ("parse_log_pytest_options", True),
        ("parse_log_requests", True),
        ("parse_log_astropy", True),  # parse_log_pytest_v2
        ("parse_log_matplotlib", False),  # rewrites parameters: not node ids
        ("parse_log_seaborn", True),
        ("parse_log_django", False),
        ("parse_log_sympy", False),
        ("parse_log_jest", False),
    ],
)
def test_pytest_family_by_parser(parser, driven):
    harness_or_skip()
    assert harness.pytest_family(_swebench(parser, [])) is driven


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
