"""`agentbon tasks migration` on small real repositories, in real Docker sandboxes.

``alpha`` still calls a deprecated function (it warns ``DeprecationWarning``) and has one test broken before any
migration; ``beta`` has nothing to migrate; ``bare`` has no tests; one line names a path that does not exist. The
suite gets alpha's task only: FAIL_TO_PASS = the tests that fail with DeprecationWarning as errors and the
acceptance test (the old call is still there), PASS_TO_PASS = the tests that pass either way, and the broken test
in neither list; it validates without a gold patch. Each other repository is refused naming the step."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentbon.author.migration import ACCEPTANCE_ID, lists_from, read_list
from agentbon.cli import app
from agentbon.tasks import load_task
from tests.author.test_from_commit import commit, git

LIB = (
    "import warnings\n\n\ndef old_api(x):\n"
    '    warnings.warn("old_api is deprecated: use new_api", DeprecationWarning, stacklevel=2)\n'
    "    return x * 2\n\n\ndef new_api(x):\n    return x * 2\n"
)


def make(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, files, "initial")
    return root


@pytest.mark.docker
def test_a_migration_suite_from_a_repository_list(tmp_path):
    from agentbon.sandbox import docker_client

    try:
        docker_client(timeout=10)
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"no Docker engine: {e}")
    alpha = make(tmp_path / "alpha", {
        "alpha/__init__.py": "", "alpha/lib.py": LIB,
        "alpha/calc.py": "from alpha.lib import old_api\n\n\ndef double(x):\n    return old_api(x)\n",
        "tests/test_calc.py": "from alpha.calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n\n\n"
                              "def test_pure():\n    assert 1 + 1 == 2\n\n\ndef test_broken():\n    assert double(1) == 3\n",
    })  # fmt: skip
    beta = make(tmp_path / "beta", {"beta/__init__.py": "", "tests/test_b.py": "def test_b():\n    assert True\n"})
    bare = make(tmp_path / "bare", {"bare/__init__.py": "X = 1\n"})
    listing = tmp_path / "repos.txt"
    listing.write_text(f"# the night's repositories\n{alpha}\n{beta} main\n{bare}\n{tmp_path / 'missing'}\n")
    instruction = tmp_path / "retire-old-api.md"
    instruction.write_text("Replace every call of `alpha.lib.old_api` with `new_api`; behaviour stays the same.\n")
    out = tmp_path / "suite"
    result = CliRunner().invoke(
        app, ["tasks", "migration", str(listing), "-i", str(instruction), "-o", str(out), "-W", "DeprecationWarning",
              "--acceptance", "! grep -rn 'old_api(' --include=*.py . | grep -v '/lib.py:'", "--timeout", "300"],
        env={"COLUMNS": "300"},
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())
    assert (
        f"refused {beta} ({listing}:3): {beta}: tests: nothing at the base shows what the instruction removes" in output
    )
    assert f"refused {bare} ({listing}:4): {bare}: tests: pytest found no tests at the base" in output
    assert f"refused {tmp_path / 'missing'} ({listing}:5): {tmp_path / 'missing'}: read:" in output
    [folder] = list(out.iterdir())
    assert folder.name == "retire-old-api-alpha"
    task = load_task(folder)
    assert task.kind == "migration" and task.evidence_is_grade and task.gold_patch is None
    assert task.grade.fail_to_pass == ["tests/test_calc.py::test_double", ACCEPTANCE_ID]
    assert task.grade.pass_to_pass == ["tests/test_calc.py::test_pure"]
    assert task.metadata["broken_at_base"] == "1: tests/test_calc.py::test_broken"
    assert task.grade.pytest_plugins == ["agentbon_warnings_as_errors"]
    assert task.problem_statement.startswith("Replace every call")
    validated = CliRunner().invoke(app, ["tasks", "validate", str(folder), "--runs", "2"], env={"COLUMNS": "300"})
    assert validated.exit_code == 0, validated.output
    assert "no gold patch" in " ".join(validated.output.split())


@pytest.mark.docker
def test_an_acceptance_test_outside_testpaths_is_still_measured_and_the_python_is_named(tmp_path):
    """The repository's pytest collects only ``gamma/tests``: the acceptance test at the root would not be collected
    by the whole-suite run, and a missing result counted as failing once wrote a task whose empty patch resolves."""
    from agentbon.sandbox import docker_client

    try:
        docker_client(timeout=10)
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"no Docker engine: {e}")
    gamma = make(tmp_path / "gamma", {
        "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["gamma/tests"]\n',
        "gamma/__init__.py": "", "gamma/lib.py": LIB, "gamma/tests/__init__.py": "",
        "gamma/calc.py": "from gamma.lib import old_api\n\n\ndef double(x):\n    return old_api(x)\n",
        "gamma/tests/test_calc.py": "from gamma.calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
    })  # fmt: skip
    listing = tmp_path / "repos.txt"
    listing.write_text(f"{gamma}\n")
    instruction = tmp_path / "use-new-api.md"
    instruction.write_text("Call `gamma.lib.new_api` instead of `old_api`.\n")
    out = tmp_path / "suite"
    result = CliRunner().invoke(
        app, ["tasks", "migration", str(listing), "-i", str(instruction), "-o", str(out),
              "--acceptance-pattern", "import old_api", "--timeout", "300"],
        env={"COLUMNS": "300"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "the sandbox runs Python 3." in output
    task = load_task(out / "use-new-api-gamma")
    assert task.grade.fail_to_pass == [ACCEPTANCE_ID]
    assert task.grade.pass_to_pass == ["gamma/tests/test_calc.py::test_double"]
    assert task.metadata["python"].startswith("3.")
    validated = CliRunner().invoke(app, ["tasks", "validate", str(out / "use-new-api-gamma")], env={"COLUMNS": "300"})
    assert validated.exit_code == 0, validated.output  # the empty patch does not resolve it


def test_an_acceptance_pattern_passes_only_where_git_grep_finds_nothing(tmp_path):
    """The pattern's command, run as the acceptance test runs it: a match fails, no match passes, and git failing
    (here: not a repository) fails rather than passing as "nothing found"."""
    import subprocess

    from agentbon.author.migration import pattern_command

    repo = make(tmp_path / "r", {"a.py": "from lib import old_api\n", "b.txt": "import old_api\n"})
    command = pattern_command("import old_api")

    def run(where: Path) -> int:
        return subprocess.run(["/bin/sh", "-c", command], cwd=where, capture_output=True).returncode

    assert run(repo) != 0
    commit(repo, {"a.py": "from lib import new_api\n"}, "migrated")
    assert run(repo) == 0  # b.txt still matches, but only Python files count
    (tmp_path / "plain").mkdir()
    assert run(tmp_path / "plain") != 0


def test_the_base_runs_decide_the_lists_and_a_broken_test_is_in_neither():
    plain = {"t.py::a": "passed", "t.py::b": "passed", "t.py::c": "failed", "t.py::d": "error"}
    strict = {
        "t.py::a": "failed",
        "t.py::b": "passed",
        "t.py::c": "failed",
        "t.py::d": "error",
        ACCEPTANCE_ID: "failed",
    }
    assert lists_from(plain, strict, acceptance=True) == (
        ["t.py::a", ACCEPTANCE_ID],
        ["t.py::b"],
        ["t.py::c", "t.py::d"],
    )
    strict[ACCEPTANCE_ID] = "passed"
    assert lists_from(plain, strict, acceptance=True)[1] == ["t.py::b", ACCEPTANCE_ID]


def test_a_repository_list_names_its_bad_lines(tmp_path):
    listing = tmp_path / "repos.txt"
    listing.write_text("a/b\n\n# comment\nhttps://x/y.git v1.2  # pinned\nthree words here\n")
    lines, errors = read_list(listing)
    assert [(x.source, x.ref, x.where) for x in lines] == [
        ("a/b", None, f"{listing}:1"), ("https://x/y.git", "v1.2", f"{listing}:4"),
    ]  # fmt: skip
    assert errors == [f"{listing}:5: expected 'SOURCE [REF]', got 3 words"]
