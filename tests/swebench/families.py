"""SWE-bench-format fixture instances for three test-runner families the harness supports: pytest, Django, SymPy.

Each family is a small real repository (two commits with fixed dates, so its sha, and the task image built
from it, are the same on every run), a test patch, FAIL_TO_PASS / PASS_TO_PASS ids in the family's own
format, an eval script written the way the harness writes them (``swebench`` 4.x's
``make_eval_script_list``, which 5.x datasets carry as ``eval_script``), a log parser from the harness's
``PARSER_REGISTRY``, a gold patch and a wrong one. The instance names no image but an agentbon
``environment`` whose setup reproduces an instance image's layout on agentbon's base image: the repository at
``/testbed``, ``/opt/miniconda3/bin/activate`` defining a ``conda`` that activates ``testbed`` (a venv holding
``fixturedep``, a module the repositories import, so tests that run outside the environment fail), and
``~/.bashrc`` activating it as the images' does.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

HEREDOC = "EOF_114329324912"
"""The heredoc delimiter the harness's eval scripts use for the test patch."""
GIT_ENV = {
    "GIT_AUTHOR_NAME": "fixture",
    "GIT_AUTHOR_EMAIL": "fixture@localhost",
    "GIT_COMMITTER_NAME": "fixture",
    "GIT_COMMITTER_EMAIL": "fixture@localhost",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000",
}
ENV = "/opt/miniconda3/envs/testbed"
CONDA_SETUP = [
    "mkdir -p /opt/miniconda3/bin",
    f"python3 -m venv --system-site-packages --without-pip {ENV}",
    # The images' activate script defines the shell function `conda`; this one only knows `conda activate ENV`.
    'printf \'%s\\n\' \'conda() { if [ "$1" = activate ]; then export CONDA_DEFAULT_ENV="$2"'
    ' CONDA_PREFIX="/opt/miniconda3/envs/$2" PATH="/opt/miniconda3/envs/$2/bin:$PATH"; fi; }\''
    " > /opt/miniconda3/bin/activate",
    f"printf '#!/bin/sh\\nexec python -m pytest \"$@\"\\n' > {ENV}/bin/pytest && chmod +x {ENV}/bin/pytest",
    f'echo \'NAME = "testbed"\' > "$({ENV}/bin/python -c \'import sysconfig; print(sysconfig.get_paths()["purelib"])\')'
    '/fixturedep.py"',
    "printf 'source /opt/miniconda3/bin/activate\\nconda activate testbed\\ncd /testbed\\n' >> ~/.bashrc",
]
"""``environment.setup`` commands that give agentbon's base image an instance image's layout."""


@dataclass
class Family:
    """One fixture instance: the repository files, the edits that make its patches, and how the harness runs it."""

    repo: str
    """``owner/name``, as in a dataset; the clone comes from the mirror the tests set."""
    files: dict[str, str]
    test_edits: dict[str, str]
    gold_edits: dict[str, str]
    wrong_edits: dict[str, str]
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    test_command: str
    directives: list[str]
    log_parser: str
    evidence: list[str]
    """The PASS_TO_PASS ids that exist before the test patch (what agentbon keeps as selection evidence)."""
    executable: list[str] = field(default_factory=list)

    @property
    def instance_id(self) -> str:
        return self.repo.replace("/", "__") + "-1"


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def _write(root: Path, files: dict[str, str], executable: tuple[str, ...] | list[str] = ()) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
        (root / name).chmod(0o755 if name in executable else 0o644)


def make_repo(family: Family, path: Path) -> str:
    """The family's repository at ``path``: an initial commit and a small base commit (``git show`` stays short)."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    _write(path, family.files, family.executable)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    (path / "CHANGES").write_text("base\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    return git(path, "rev-parse", "HEAD").strip()


def diff(repo: Path, edits: dict[str, str], scratch: Path) -> str:
    """A git patch against the repo's HEAD that writes the given files."""
    subprocess.run(["git", "clone", "-q", str(repo), str(scratch)], check=True, capture_output=True)
    _write(scratch, edits)
    git(scratch, "add", "-A")
    return git(scratch, "diff", "--cached", "HEAD")


def eval_script(
    base_commit: str, test_patch: str, test_command: str, directives: list[str], cd: str = "/testbed"
) -> str:
    """An eval script as the harness writes them (``swebench`` 4.x ``make_eval_script_list_py``)."""
    test_files = [line[len("--- a/") :] for line in test_patch.splitlines() if line.startswith("--- a/")]
    reset = f"git checkout {base_commit} {' '.join(test_files)}"
    lines = [
        "source /opt/miniconda3/bin/activate",
        "conda activate testbed",
        f"cd {cd}",
        f"git config --global --add safe.directory {cd}",
        f"cd {cd}",
        "git status",
        "git show",
        f"git -c core.fileMode=false diff {base_commit}",
        "source /opt/miniconda3/bin/activate",
        "conda activate testbed",
        reset,
        f"git apply -v - <<'{HEREDOC}'\n{test_patch}\n{HEREDOC}",
        ": '>>>>> Start Test Output'",
        " ".join([test_command, *directives]),
        ": '>>>>> End Test Output'",
        reset,
    ]
    return "\n".join(["#!/bin/bash", "set -uxo pipefail", *lines]) + "\n"


@dataclass
class Built:
    """A family made real: its repository, its patches and its SWE-bench instance record."""

    family: Family
    base_commit: str
    test_patch: str
    gold: str
    wrong: str
    record: dict

    def patch(self, which: str) -> str:
        return {"gold": self.gold, "wrong": self.wrong, "empty": ""}[which]


def build(family: Family, mirror: Path, scratch: Path, cd: str = "/testbed", environment: bool = True) -> Built:
    """Make the family's repository under ``mirror/<owner>/<name>``, its patches, and its instance record."""
    repo = mirror / family.repo
    base = make_repo(family, repo)
    scratch.mkdir(parents=True, exist_ok=True)
    test_patch = diff(repo, family.test_edits, scratch / "tests")
    gold = diff(repo, family.gold_edits, scratch / "gold")
    wrong = diff(repo, family.wrong_edits, scratch / "wrong")
    record = {
        "repo": family.repo,
        "instance_id": family.instance_id,
        "base_commit": base,
        "patch": gold,
        "test_patch": test_patch,
        "problem_statement": f"{family.repo}: see the failing test.",
        "hints_text": "",
        "created_at": "2024-01-01T00:00:00Z",
        "version": "1.0",
        "environment_setup_commit": base,
        "FAIL_TO_PASS": json.dumps(family.fail_to_pass),
        "PASS_TO_PASS": json.dumps(family.pass_to_pass),
        "eval_script": eval_script(base, test_patch, family.test_command, family.directives, cd),
        "log_parser": family.log_parser,
        "eval_type": "pass_and_fail",
        "image": f"swebench/sweb.eval.x86_64.{family.instance_id.replace('__', '_1776_')}:latest",
    }
    if environment:
        record["environment"] = {"setup": CONDA_SETUP}
    return Built(family, base, test_patch, gold, wrong, record)


# ------------------------------------------------------------------------------------------------ pytest

_OPS = "import fixturedep  # installed only in the testbed environment\n\n\ndef add(a, b):\n    return {add}\n\n\ndef mul(a, b):\n    return a * b\n"
_TESTS = """from calc.ops import add, mul


class CheckMixin:
    def {helper}(self):
        assert mul(1, 7) == 7


class TestOps(CheckMixin):
    def test_zero(self):
        assert mul(0, 5) == 0


def test_mul():
    assert mul(2, 3) == 6
{extra}"""
PYTEST = Family(
    repo="fixture/calc",
    files={
        "conftest.py": "",  # puts the repository root on sys.path (the images install it in editable mode)
        "calc/__init__.py": "",
        "calc/ops.py": _OPS.format(add="a - b"),
        "tests/test_ops.py": _TESTS.format(helper="check_identity", extra=""),
    },
    test_edits={
        # the helper of a shared mixin becomes a test (it exists only with the test patch), a new test file, F2P
        "tests/test_ops.py": _TESTS.format(
            helper="test_identity", extra="\n\ndef test_add():\n    assert add(2, -3) == -1\n"
        ),
        "tests/test_new.py": "from calc.ops import mul\n\n\ndef test_new_thing():\n    assert mul(2, 2) == 4\n",
    },
    gold_edits={"calc/ops.py": _OPS.format(add="a + b")},
    wrong_edits={"calc/ops.py": _OPS.format(add="abs(a) + abs(b)")},
    fail_to_pass=["tests/test_ops.py::test_add"],
    pass_to_pass=[
        "tests/test_ops.py::TestOps::test_zero",
        "tests/test_ops.py::TestOps::test_identity",
        "tests/test_ops.py::test_mul",
        "tests/test_new.py::test_new_thing",
    ],
    test_command="pytest -rA",
    directives=["tests/test_ops.py", "tests/test_new.py"],
    log_parser="parse_log_pytest",
    evidence=["tests/test_ops.py::TestOps::test_zero", "tests/test_ops.py::test_mul"],
)

# ------------------------------------------------------------------------------------------------ Django

_RUNTESTS = '''#!/usr/bin/env python
"""A tiny stand-in for Django's tests/runtests.py: labels are modules under tests/, output is Django's verbose form."""
import argparse
import os
import sys
import unittest

import fixturedep  # noqa: F401  (installed only in the testbed environment)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]


class Result(unittest.TextTestResult):
    def getDescription(self, test):
        return f"{test._testMethodName} ({type(test).__module__}.{type(test).__qualname__})"


parser = argparse.ArgumentParser()
parser.add_argument("labels", nargs="*")
parser.add_argument("--verbosity", type=int, default=1)
parser.add_argument("--settings")
parser.add_argument("--parallel")
args = parser.parse_args()
print("Testing against Django installed in '/testbed/django'")
suite = unittest.defaultTestLoader.loadTestsFromNames(args.labels)
result = unittest.TextTestRunner(verbosity=args.verbosity, resultclass=Result).run(suite)
sys.exit(not result.wasSuccessful())
'''
_GEOMETRY = "def area(w, h):\n    return {area}\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n"
_DJ_TESTS = """import unittest

from shapes_lib.geometry import area, perimeter


class AreaTests(unittest.TestCase):
    def test_perimeter(self):
        self.assertEqual(perimeter(2, 3), 10)
{extra}"""
DJANGO = Family(
    repo="fixture/shapes",
    files={
        "shapes_lib/__init__.py": "",
        "shapes_lib/geometry.py": _GEOMETRY.format(area="w + h"),
        "tests/runtests.py": _RUNTESTS,
        "tests/shapes/__init__.py": "",
        "tests/shapes/tests.py": _DJ_TESTS.format(extra=""),
    },
    executable=["tests/runtests.py"],
    test_edits={
        "tests/shapes/tests.py": _DJ_TESTS.format(
            extra="\n    def test_area_of_rectangle(self):\n        self.assertEqual(area(2, 3), 6)\n"
        ),
        "tests/shapes/test_units.py": "import unittest\n\n\nclass UnitTests(unittest.TestCase):\n"
        "    def test_unit_square(self):\n        self.assertEqual(1 * 1, 1)\n",
    },
    gold_edits={"shapes_lib/geometry.py": _GEOMETRY.format(area="w * h")},
    wrong_edits={"shapes_lib/geometry.py": _GEOMETRY.format(area="w * w")},
    fail_to_pass=["test_area_of_rectangle (shapes.tests.AreaTests)"],
    pass_to_pass=["test_perimeter (shapes.tests.AreaTests)", "test_unit_square (shapes.test_units.UnitTests)"],
    test_command="./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1",
    directives=["shapes.tests", "shapes.test_units"],
    log_parser="parse_log_django",
    evidence=["test_perimeter (shapes.tests.AreaTests)"],
)

# ------------------------------------------------------------------------------------------------- SymPy

_BIN_TEST = '''#!/usr/bin/env python
"""A tiny stand-in for SymPy's bin/test: runs the test_* functions of the files given, prints SymPy's format."""
import importlib.util
import os
import sys
import traceback

import fixturedep  # noqa: F401  (installed only in the testbed environment)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
files = [a for a in sys.argv[1:] if not a.startswith("-")]
print("=" * 29 + " test process starts " + "=" * 30)
print(f"executable:         {sys.executable}")
passed, failures = 0, []
for path in files:
    spec = importlib.util.spec_from_file_location(path[:-3].replace("/", "."), os.path.join(ROOT, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tests = [(n, f) for n, f in vars(module).items() if n.startswith("test_") and callable(f)]
    print(f"{path}[{len(tests)}] ")
    for name, func in tests:
        try:
            func()
        except AssertionError:
            print(f"{name} F")
            failures.append((path, name, traceback.format_exc()))
        except Exception:
            print(f"{name} E")
            failures.append((path, name, traceback.format_exc()))
        else:
            print(f"{name} ok")
            passed += 1
for path, name, text in failures:
    print("_" * 80)
    print(f"{'_' * 10} {path}:{name} {'_' * 10}")
    print(text)
print(f"{'=' * 13} tests finished: {passed} passed, {len(failures)} failed, in 0.01 seconds {'=' * 13}")
sys.exit(1 if failures else 0)
'''
_NT = "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return {ret}\n\n\ndef lcm(a, b):\n    return a * b // gcd(a, b)\n"
_SYM_TESTS = "from symfam.ntheory import gcd, lcm\n\n\ndef test_gcd():\n    assert gcd(12, 18) == 6\n\n\ndef test_lcm():\n    assert lcm(4, 6) == 12\n{extra}"
SYMPY = Family(
    repo="fixture/symfam",
    files={
        "bin/test": _BIN_TEST,
        "symfam/__init__.py": "",
        "symfam/ntheory.py": _NT.format(ret="a"),
        "symfam/tests/__init__.py": "",
        "symfam/tests/test_ntheory.py": _SYM_TESTS.format(extra=""),
    },
    executable=["bin/test"],
    test_edits={
        "symfam/tests/test_ntheory.py": _SYM_TESTS.format(
            extra="\n\ndef test_gcd_negative():\n    assert gcd(4, -6) == 2\n"
        ),
    },
    gold_edits={"symfam/ntheory.py": _NT.format(ret="abs(a)")},
    wrong_edits={"symfam/ntheory.py": _NT.format(ret="max(a, 1)")},
    fail_to_pass=["test_gcd_negative"],
    pass_to_pass=["test_gcd", "test_lcm"],
    test_command="PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose",
    directives=["symfam/tests/test_ntheory.py"],
    log_parser="parse_log_sympy",
    evidence=["test_gcd", "test_lcm"],
)

FAMILIES = {"pytest": PYTEST, "django": DJANGO, "sympy": SYMPY}
