"""`agentbon tasks from-commit` on a small real repository, in real Docker sandboxes.

The repository's history: a base with a bug (``add`` subtracts) and a test suite, the fix commit (the code fix
plus a new test and an edited one), and a later commit that must never reach the task folder. The task written
from the fix has the new and edited tests as FAIL_TO_PASS, the untouched passing tests as PASS_TO_PASS, a bundle
that ends at the base, and it validates (gold resolves, empty does not). Commits that give no usable task are
refused naming the repository and the step, and the other commits' tasks are still written."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentbon.author.commit import lean_pass_to_pass, outcome_lists
from agentbon.author.imports import is_test_path
from agentbon.cli import app
from agentbon.tasks import load_task

GIT = ["-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT, *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> dict[str, str | Path]:
    root = tmp_path / "calc"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    base = commit(root, {
        "calc/__init__.py": "",
        "calc/ops.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
        "tests/test_ops.py": "from calc.ops import add, mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n\n\n"
                             "def test_add_zero():\n    assert add(0, 0) == 0\n",
        "tests/test_other.py": "def test_truth():\n    assert True\n",
    }, "calc: add and mul")  # fmt: skip
    fix = commit(root, {
        "calc/ops.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
        "tests/test_ops.py": "from calc.ops import add, mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n\n\n"
                             "def test_add_zero():\n    assert add(0, 0) == 0\n    assert add(0, 1) == 1\n\n\n"
                             "def test_add():\n    assert add(2, 3) == 5\n",
    }, "Fix add: it subtracted\n\nadd(2, 3) returned -1 instead of 5.")  # fmt: skip
    later = commit(root, {"calc/ops.py": "def add(a, b):\n    return b + a  # the future\n\n\ndef mul(a, b):\n    return a * b\n"},
                   "later")  # fmt: skip
    code_only = commit(root, {"calc/ops.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"},
                       "refactor")  # fmt: skip
    passing = commit(root, {"tests/test_more.py": "from calc.ops import mul\n\n\ndef test_mul_one():\n    assert mul(1, 1) == 1\n",
                            "calc/ops.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b  # same\n"},
                     "more tests, no fix")  # fmt: skip
    return {"root": root, "base": base, "fix": fix, "later": later, "code_only": code_only, "passing": passing}


@pytest.mark.docker
def test_a_fix_commit_becomes_a_task_that_validates_and_bad_commits_are_refused(repo, tmp_path):
    from agentbon.sandbox import docker_client

    try:
        docker_client(timeout=10)
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"no Docker engine: {e}")
    out = tmp_path / "suite"
    runner = CliRunner()
    batch = tmp_path / "night.yaml"  # one entry a line; the fix's problem statement is its commit message
    (tmp_path / "more.md").write_text("mul(1, 1) should be 1.\n")
    batch.write_text(f"- {{repo: {repo['root']}, commit: {repo['fix']}}}\n"
                     f"- {{repo: {repo['root']}, commit: {repo['code_only']}, id: calc-refactor}}\n"
                     f"- {{repo: {repo['root']}, commit: {repo['passing']}, problem_file: more.md}}\n")  # fmt: skip
    result = runner.invoke(
        app, ["tasks", "from-commit", "--batch", str(batch), "--out", str(out), "--timeout", "300"],
        env={"COLUMNS": "300"},
    )  # fmt: skip
    assert result.exit_code == 1, result.output  # two of the three were refused
    output = " ".join(result.output.split())
    assert (
        f"refused {repo['code_only']} ({batch}:2): {repo['root']}: split: {str(repo['code_only'])[:12]} changes no "
        "test file" in output
    )
    assert (
        f"refused {repo['passing']} ({batch}:3): {repo['root']}: tests: no test fails before the fix and passes after "
        "it" in output
    )
    assert "the problem statement is the commit message" in output and "names the changed code (add)" in output
    [folder] = list(out.iterdir())
    assert folder.name == f"calc-{str(repo['fix'])[:10]}"
    task = load_task(folder)
    assert task.metadata["problem_statement"] == "the commit message" and task.metadata["problem_names_the_fix"] == "add"
    assert task.grade.fail_to_pass == ["tests/test_ops.py::test_add", "tests/test_ops.py::test_add_zero"]
    assert task.grade.pass_to_pass == ["tests/test_ops.py::test_mul"]  # lean: test_other.py imports no calc.ops
    assert task.metadata["pass_to_pass"] == "lean: 1 of 2" and "1 of the suite's 2 PASS_TO_PASS" in output
    assert task.repo.base_commit == repo["base"] and task.problem_statement.startswith("Fix add: it subtracted")
    assert "return a + b" in (task.gold_patch or "") and "tests/" not in (task.gold_patch or "")
    assert "def test_add()" in task.grade.patch and "calc/ops.py" not in task.grade.patch
    # The bundle holds the past only: the fix and the later commit are not in it.
    heads = git(folder, "bundle", "list-heads", "repo.bundle")
    assert heads.split()[0] == repo["base"]
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(folder / "repo.bundle"), str(clone))
    objects = git(clone, "rev-list", "--all")
    assert repo["fix"] not in objects and repo["later"] not in objects
    validated = runner.invoke(app, ["tasks", "validate", str(folder), "--runs", "1"], env={"COLUMNS": "300"})
    assert validated.exit_code == 0, validated.output
    assert "valid" in validated.output


def test_test_files_are_told_from_code_by_path():
    assert all(map(is_test_path, ["tests/test_a.py", "pkg/tests/helpers.py", "test/data.json", "a/test_b.py",
                                  "b_test.py", "conftest.py", "src/pkg/testing/util.py", "e2e/helpers.py"]))  # fmt: skip
    assert not any(
        map(is_test_path, ["pkg/ops.py", "pkg/contest.py", "testsuite.py", "docs/tests.md", "pkg/attest.py"])
    )


def test_lean_pass_to_pass_reads_the_files_at_the_fix_commit(repo):
    import git

    changed = ["calc/ops.py", "tests/test_ops.py"]
    p2p = ["tests/test_ops.py::test_mul", "tests/test_other.py::test_truth", "elsewhere/test_x.py::test_y"]
    lean, how = lean_pass_to_pass(git.Repo(repo["root"]), str(repo["fix"]), changed, p2p)
    # test_other.py imports nothing of calc.ops; a file not at that path in the repository is kept, unjudged
    assert lean == ["tests/test_ops.py::test_mul", "elsewhere/test_x.py::test_y"] and "importing calc.ops" in how
    whole, said = lean_pass_to_pass(git.Repo(repo["root"]), str(repo["fix"]), ["tests/test_ops.py", "calc/data.json"], p2p)
    assert whole == p2p and said.endswith("the whole suite")


def test_a_bad_pass_to_pass_choice_is_refused_before_any_work(tmp_path):
    result = CliRunner().invoke(app, ["tasks", "from-commit", str(tmp_path), "abc", "--pass-to-pass", "some"])
    assert result.exit_code == 2 and "'some': give lean or all" in " ".join(result.output.split())


def test_fail_to_pass_includes_new_tests_the_base_could_not_collect():
    before = {"tests/t.py::test_old": "passed", "tests/t.py::test_edit": "failed", "tests/u.py::test_flaky": "error"}
    after = {"tests/t.py::test_old": "passed", "tests/t.py::test_edit": "passed", "tests/new.py::test_new": "passed",
             "tests/u.py::test_flaky": "failed", "tests/v.py::test_elsewhere": "passed"}  # fmt: skip
    f2p, p2p = outcome_lists(before, after, {"tests/t.py", "tests/new.py"})
    assert f2p == ["tests/new.py::test_new", "tests/t.py::test_edit"]
    assert p2p == ["tests/t.py::test_old"]  # test_elsewhere was not seen before and its file is not the diff's


@pytest.mark.parametrize(
    ("given", "said"),
    [("NOEQUALS", "expected NAME=VALUE"), ("1X=a", "not a variable name"), ("PYTEST_PLUGINS=x", "dropped by")],
)
def test_a_malformed_env_option_stops_before_any_work(tmp_path, given, said):
    out = tmp_path / "suite"
    result = CliRunner().invoke(
        app, ["tasks", "from-commit", str(tmp_path / "nowhere"), "abc123", "--env", given, "--out", str(out)],
        env={"COLUMNS": "300"},
    )  # fmt: skip
    assert result.exit_code == 2 and said in result.output and "--env" in result.output
    assert not out.exists()


def test_a_failed_subtest_keeps_its_test_failed():
    """pytest >= 9 reports each subtest, then the test itself as passed: authoring must not call it passing (the
    verifier's JUnit reading does not); found on python-slugify's release tests."""
    from types import SimpleNamespace

    from agentbon.author.outcomes import PLUGIN

    plugin: dict = {}
    exec(compile(PLUGIN, "agentbon_outcomes", "exec"), plugin)

    def report(nodeid: str, outcome: str, when: str = "call") -> SimpleNamespace:
        return SimpleNamespace(nodeid=nodeid, when=when, outcome=outcome, passed=outcome == "passed",
                               failed=outcome == "failed")  # fmt: skip

    for r in (report("t.py::T::test_sub", "failed"), report("t.py::T::test_sub", "passed"),
              report("t.py::test_ok", "passed"), report("t.py::test_ok", "passed", "teardown")):  # fmt: skip
        plugin["pytest_runtest_logreport"](r)
    assert plugin["_tests"] == {"t.py::T::test_sub": "failed", "t.py::test_ok": "passed"}


def test_the_image_plugins_are_named_without_the_projects_own():
    from agentbon.author.commit import image_plugins
    from agentbon.types import ExecResult

    class Box:
        def __init__(self, output: str, code: int = 0):
            self.result, self.commands = ExecResult(exit_code=code, output=output), []

        def exec(self, command: str, **_: object) -> ExecResult:
            self.commands.append(command)
            return self.result

    box = Box('warning: noise\n["pytest_cov.plugin", "xdist.plugin", "bad name; rm -rf /"]\n')
    assert image_plugins(box, "acme-billing") == ["pytest_cov.plugin", "xdist.plugin"]
    assert box.commands[0].endswith(" acme-billing") and "pytest11" in box.commands[0]
    assert image_plugins(Box("Traceback ...", 1), None) == []


def test_a_batch_file_is_checked_whole_before_any_task_is_made(tmp_path):
    from agentbon.author.batch import read_batch

    (tmp_path / "p.md").write_text("The bug.\n")
    batch = tmp_path / "b.yaml"
    batch.write_text(
        "- {repo: a, commit: c1, id: a-1, problem_file: p.md}\n"
        "- {repo: a}\n"
        "- {repo: a, commit: c2, problem: x, problem_file: p.md}\n"
        "- {repo: a, commit: c3, id: a-1}\n"
        "- {repo: a, commit: c4, problem_file: missing.md}\n"
        "- {repo: a, commit: c5, colour: red}\n"
        "- just a string\n"
        "- {repo: b, commit: c6, id: 'bad id'}\n"
    )
    entries, errors = read_batch(batch, commit_required=True)
    assert [(e.repo, e.commit, e.id, e.where) for e in entries] == [("a", "c1", "a-1", f"{batch}:1")]
    assert entries[0].statement(batch) == "The bug.\n"
    assert [e.split(": ", 1)[0] for e in errors] == [f"{batch}:{n}" for n in range(2, 9)]
    said = " | ".join(errors)
    for part in ("no commit", "not both", "id a-1 is given twice", "missing.md: no such file", "colour",
                 "expected a mapping", "'bad id'"):  # fmt: skip
        assert part in said, said
    assert read_batch(batch, commit_required=False)[0][1].commit is None  # migration: the base ref is optional
    result = CliRunner().invoke(app, ["tasks", "from-commit", "--batch", str(batch)], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and f"{batch}:2" in " ".join(result.output.split())


def test_a_commit_message_that_names_the_changed_code_is_flagged():
    from agentbon.author.batch import gives_away

    fix = (
        "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1,5 +1,5 @@\n"
        " def add(a, b):\n-    return a - b\n+    return a + b\n \n \n class Parser:\n"
    )
    assert gives_away("Fix add: it subtracted (ops.py)", fix) == ["add", "ops.py"]
    assert gives_away("calc.ops.add returned -1 for add(2, 3)", fix) == ["add"]
    assert gives_away("Wrong sums on payday; see #123", fix) == []
    assert gives_away("address the adder", fix) == []  # whole words only


def test_every_repository_form_is_read_and_a_missing_commit_names_the_refs_searched(repo, tmp_path):
    from agentbon.author.commit import Refused, _repo, split_fix

    root = repo["root"]
    bare = tmp_path / "calc.git"
    git(tmp_path, "clone", "-q", "--bare", str(root), str(bare))
    no_config = tmp_path / "calc-noconfig.git"
    git(tmp_path, "clone", "-q", "--bare", str(root), str(no_config))
    (no_config / "config").unlink()  # as some mirroring tools leave it
    bundle = tmp_path / "calc.bundle"
    git(root, "bundle", "create", str(bundle), "--all")
    forms = [str(root), str(bare), str(no_config), bare.as_uri(), str(bundle)]
    for i, form in enumerate(forms):
        base, fix, gold, test_patch, _ = split_fix(_repo(form, tmp_path / f"m{i}"), form, str(repo["fix"]))
        assert (base, fix) == (repo["base"], repo["fix"]), form
        assert "return a + b" in gold and "def test_add()" in test_patch, form
    missing = "0123456789abcdef0123456789abcdef01234567"
    with pytest.raises(Refused) as e:
        split_fix(_repo(str(no_config), tmp_path / "m-missing"), str(no_config), missing)
    assert f"no commit {missing!r}" in str(e.value) and "main" in str(e.value) and "refs" in str(e.value)


def test_task_ids_come_from_the_repositorys_own_name_and_stay_unique(repo, tmp_path):
    from agentbon.author.commit import _repo, repo_name, unique_folder

    root, fix = repo["root"], str(repo["fix"])
    plain = tmp_path / "acme" / "repo"  # a folder called repo, no remote, no metadata: the folder above it
    git(tmp_path, "clone", "-q", str(root), str(plain))
    git(plain, "remote", "remove", "origin")
    assert repo_name(_repo(str(plain), tmp_path / "a"), str(plain), fix) == "acme"
    git(plain, "remote", "add", "origin", "git@example.org:acme/billing.git")
    assert repo_name(_repo(str(plain), tmp_path / "b"), str(plain), fix) == "billing"
    git(plain, "remote", "remove", "origin")
    named = commit(plain, {"pyproject.toml": '[project]\nname = "calc-lib"\n'}, "metadata")
    assert repo_name(_repo(str(plain), tmp_path / "c"), str(plain), named) == "calc-lib"
    suite, said = tmp_path / "suite", []
    (suite / "calc-1").mkdir(parents=True)
    (suite / "calc-1-2").mkdir()
    assert unique_folder(suite, "calc-1", said.append) == "calc-1-3" and "calc-1-3" in said[0]
    assert unique_folder(suite, "calc-9", said.append) == "calc-9" and len(said) == 1


def test_metadata_source_is_the_repositorys_url_or_name_never_a_local_path(repo, tmp_path):
    from agentbon.author.commit import public_source

    clone = tmp_path / "repo"
    git(tmp_path, "clone", "-q", str(repo["root"]), str(clone))  # origin is a local path: not recorded
    assert public_source(str(clone), "calc") == "calc"
    assert public_source(clone.as_uri(), "calc") == "calc"
    git(clone, "remote", "set-url", "origin", "https://example.org/acme/calc.git")
    assert public_source(str(clone), "calc") == "https://example.org/acme/calc.git"
    assert public_source("git@example.org:acme/calc.git", "calc") == "git@example.org:acme/calc.git"
