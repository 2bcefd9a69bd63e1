"""Canary plans (agentbon/verify/canary.py): where they go, that they come out as planted under a real pytest and
unittest, and every way a session can fail them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentbon.verify.canary import MAX_DIRS, directories, plan, problems
from agentbon.verify.junit import Case, parse_junit


def _plant(root: Path, runner: str, ids: list[str]):
    made = plan(runner, ids)
    assert made is not None
    for f in made.files:
        (root / f.path).parent.mkdir(parents=True, exist_ok=True)
        (root / f.path).write_text(f.source)
    return made


def test_one_module_per_graded_directory_with_unpredictable_names():
    ids = ["tests/test_a.py::test_x", "tests/unit/test_b.py::C::test_y[1]", "tests/test_a.py::test_z", "test_top.py"]
    first, again = plan("pytest", ids), plan("pytest", ids)
    assert first is not None and again is not None
    assert [str(Path(p).parent) for p in first.paths] == ["tests", "tests/unit", "."]
    assert set(first.ids).isdisjoint(again.ids) and set(first.paths).isdisjoint(again.paths)
    assert sorted(c.must for c in first.canaries) == ["fail"] * 6 + ["pass"] * 6  # a function and a TestCase each


def test_directories_stay_inside_the_repository_and_are_capped():
    assert directories("pytest", ["../x/test_a.py::t", "/abs/test_b.py::t"]) == [""]
    assert directories("unittest", ["pkg.tests.test_m.TestX.test_y", "test_m.T.t", "tests.test_m.test_f"]) == [
        "pkg/tests",
        "",
        "tests",
    ]
    many = [f"d{i}/test_a.py::t" for i in range(20)]
    assert len(directories("pytest", many)) == MAX_DIRS


@pytest.mark.parametrize("runner", ["command", "swebench"])
def test_runners_without_canaries(runner):
    assert plan(runner, ["x"]) is None


def test_canaries_come_out_as_planted_under_pytest(tmp_path):
    made = _plant(tmp_path, "pytest", ["tests/test_a.py::test_x", "test_top.py::test_y"])
    junit = tmp_path / "out.xml"
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}", "-q", *made.paths],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 1, ran.stdout
    assert problems(made, parse_junit(junit.read_bytes()), ran.returncode) == []


def test_canaries_come_out_as_planted_under_unittest(tmp_path):
    made = _plant(tmp_path, "unittest", ["tests.test_m.T.test_x"])
    ran = subprocess.run(
        [sys.executable, "-m", "unittest", "-v", *made.ids], cwd=tmp_path, capture_output=True, text=True
    )
    assert ran.returncode == 1
    lines = ran.stderr.splitlines()
    for c in made.canaries:
        name = c.test_id.rsplit(".", 1)[1]
        line = next(ln for ln in lines if ln.startswith(name + " "))
        assert line.endswith("ok" if c.must == "pass" else "FAIL")


def _cases(made, flip: str | None = None, drop: str | None = None) -> list[Case]:
    out = []
    for c in made.canaries:
        path, _, rest = c.test_id.partition("::")
        names = [path.removesuffix(".py").replace("/", "."), *rest.split("::")]
        outcome = "passed" if c.must == "pass" else "failed"
        if c.test_id == flip:
            outcome = "failed" if outcome == "passed" else "passed"
        if c.test_id != drop:
            out.append(Case(".".join(names[:-1]), names[-1], outcome))
    return out


def test_every_way_to_fail_the_canaries():
    made = plan("pytest", ["tests/test_a.py::test_x"])
    assert made is not None
    must_fail = next(c.test_id for c in made.canaries if c.must == "fail")
    must_pass = next(c.test_id for c in made.canaries if c.must == "pass")
    assert problems(made, _cases(made), 1) == []
    assert problems(made, _cases(made, flip=must_fail), 1) == [f"canary {must_fail} passed but was planted to fail"]
    assert problems(made, _cases(made, flip=must_pass), 1) == [f"canary {must_pass} failed but was planted to pass"]
    assert problems(made, _cases(made, drop=must_pass), 1) == [f"canary {must_pass} is missing from the JUnit XML"]
    assert problems(made, None, 0) == [f"the test process exited 0 although canary {must_fail} was planted to fail"]
    assert problems(made, None, 4) == []  # no XML, failing exit: judged as a plain failure elsewhere
    assert problems(made, _cases(made), 1, changed=[made.paths[0], "tests/other.py"]) == [
        f"canary file {made.paths[0]} changed during the run"
    ]


def test_a_package_that_no_longer_imports_is_a_plain_failure_not_a_forgery():
    """Found on a real run: a 1.5B model's patch made ``parse/__init__.py`` raise NameError; the canary planted in
    ``parse/`` (a graded doctest lives there) could not be collected and errored like every graded test there."""
    made = plan("pytest", ["parse/__init__.py::parse", "tests/test_parse.py::test_x"])
    assert made is not None
    inside = [c.test_id for c in made.canaries if c.test_id.startswith("parse/")]
    errored = _cases(made)
    errored = [Case(c.classname, c.name, "error") if any(c.name in i for i in inside) else c for c in errored]
    broken = {"parse/__init__.py::parse": "error", "tests/test_parse.py::test_x": "failed"}
    assert problems(made, errored, 1, graded=broken) == []
    # The same canary errors while a graded test beside it passed: that is a session someone rewrote.
    forged = {"parse/__init__.py::parse": "passed", "tests/test_parse.py::test_x": "passed"}
    assert len(problems(made, errored, 1, graded=forged)) == len(inside)
    assert len(problems(made, errored, 1)) == len(inside)  # without the graded outcomes nothing is excused
