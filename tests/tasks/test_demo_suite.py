"""Every task in tasks/demo is sound, checked with plain git and pytest in temporary clones (no Docker).

For each task: the bundle's history ends at the base commit (main's tip; no other commit in any ref)
and no object in it holds the fixed files or the hidden tests; at base the evidence tests pass; with
the test patch applied the FAIL_TO_PASS tests fail and the PASS_TO_PASS tests pass; with the gold
patch on top every grade and evidence test passes. AGENTBON_DEMO_REPEAT=3 runs every test step three
times (flakiness check).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentbon.diffs import files_touched
from agentbon.tasks import load_suite
from agentbon.types import Task

SUITE = Path(__file__).resolve().parents[2] / "tasks" / "demo"
TASKS, ERRORS = load_suite(SUITE)
REPEAT = int(os.environ.get("AGENTBON_DEMO_REPEAT", "1"))


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(["git", *args], cwd=repo, env=env, input=stdin, capture_output=True, text=True)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


def passed_tests(repo: Path, tests: list[str]) -> tuple[set[str], str]:
    """The tests among ``tests`` that pass in ``repo`` (run REPEAT times; a test must pass every time)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTHONPATH")}
    # The demo repos need bare pytest; skipping plugin autoload saves about a second per run here.
    env |= {"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "-q", "--", *tests]
    passed = set(tests)
    output = ""
    for _ in range(REPEAT):
        done = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=120)
        output = done.stdout + done.stderr
        passed &= {line[len("PASSED ") :] for line in done.stdout.splitlines() if line.startswith("PASSED ")}
    return passed, output[-4000:]


def blob_hashes(repo: Path, paths: list[str]) -> dict[str, str]:
    """The git blob hash of each path that exists in the worktree."""
    existing = [p for p in paths if (repo / p).is_file()]
    if not existing:
        return {}
    hashes = git(repo, "hash-object", "--stdin-paths", stdin="\n".join(existing) + "\n").split()
    return dict(zip(existing, hashes, strict=True))


def test_the_demo_suite_loads_cleanly():
    assert ERRORS == [], "\n".join(map(str, ERRORS))
    assert TASKS, f"no tasks in {SUITE}"


@pytest.mark.parametrize("task", TASKS, ids=[t.task_id for t in TASKS])
def test_demo_task_is_sound(task: Task, tmp_path: Path):
    assert task.environment.python_packages == [], "demo tasks run offline: stdlib and pytest only"
    assert task.gold_patch, "a demo task needs its gold patch"
    hidden = task.grade.files
    assert all(f.startswith("tests/") for f in hidden), f"the test patch may only touch tests/: {hidden}"
    assert not set(files_touched(task.gold_patch)) & set(hidden), "the gold patch must not touch hidden tests"
    for test_id in task.grade.fail_to_pass:
        if task.grade.patch:  # hidden tests: their names must not leak into the problem statement
            name = re.split(r"[\[(]", test_id.split("::")[-1])[0]
            assert name not in task.problem_statement, f"problem statement names hidden test {name}"

    repo = tmp_path / "repo"
    git(tmp_path, "clone", "-q", "--no-checkout", task.repo.url, str(repo))
    base = task.repo.base_commit
    git(repo, "checkout", "-q", "--detach", base)
    assert git(repo, "rev-parse", "HEAD").strip() == base
    assert git(repo, "rev-parse", "refs/remotes/origin/main").strip() == base, "base must be main's tip"
    history = set(git(repo, "rev-list", base).split())
    assert set(git(repo, "rev-list", "--all").split()) == history, "the bundle has commits beyond base"
    assert len(history) >= 2, "a demo repo has a history of 2+ commits"
    objects = {line.split()[0] for line in git(repo, "rev-list", "--all", "--objects").splitlines()}

    evidence = task.evidence_tests.tests
    if not task.evidence_is_grade:  # else the grade run below checks the same tests
        passed, log = passed_tests(repo, evidence)
        must_pass = set(task.evidence.pass_to_pass)
        assert must_pass <= passed, f"evidence tests failing at base: {must_pass - passed}\n{log}"

    if task.grade.patch:
        git(repo, "apply", "--whitespace=nowarn", "-", stdin=task.grade.patch)
    grade = task.grade.tests
    passed, log = passed_tests(repo, grade)
    assert not passed & set(task.grade.fail_to_pass), f"FAIL_TO_PASS passing at base\n{log}"
    assert set(task.grade.pass_to_pass) <= passed, f"PASS_TO_PASS failing at base\n{log}"
    assert task.grade.fail_to_pass, "a demo task needs FAIL_TO_PASS tests"

    git(repo, "apply", "--whitespace=nowarn", "-", stdin=task.gold_patch)
    secret = blob_hashes(repo, [*hidden, *files_touched(task.gold_patch)])
    leaked = {path for path, blob in secret.items() if blob in objects}
    assert not leaked, f"the bundle already holds the fixed or hidden content of {leaked}"
    everything = list(dict.fromkeys([*grade, *evidence]))
    passed, log = passed_tests(repo, everything)
    assert passed == set(everything), f"failing with the gold patch: {set(everything) - passed}\n{log}"
