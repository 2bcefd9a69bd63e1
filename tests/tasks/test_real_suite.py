"""tasks/real, the suite built from released sdists of public libraries (tasks/real/README.md), is well formed.

Without Docker or the network: every task loads; seven bug fixes and three migrations from eight libraries;
each bundle's history ends at its base commit (the fix is only in ``gold.patch``); the bug fixes' lists were
found by running the tests, so each has FAIL_TO_PASS ids, and the migrations grade with the acceptance test.
The tests themselves run in task images built from PyPI (``agentbon tasks validate tasks/real``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentbon.author.migration import ACCEPTANCE_ID
from agentbon.tasks import load_suite

SUITE = Path(__file__).resolve().parents[2] / "tasks" / "real"
TASKS, ERRORS = load_suite(SUITE)


def test_the_suite_loads_with_bug_fixes_and_migrations():
    assert ERRORS == []
    kinds = [t.kind for t in TASKS]
    assert kinds.count("bugfix") >= 5 and kinds.count("migration") >= 3, kinds
    libraries = {t.task_id.rsplit("-", 1)[0].removeprefix("stdlib-deprecations-") for t in TASKS}
    assert len(libraries) >= 8, libraries


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.task_id)
def test_each_task_ends_at_its_base_and_has_something_to_fix(task):
    bundle = Path(task.repo.url)
    heads = subprocess.run(["git", "bundle", "list-heads", str(bundle)], capture_output=True, text=True, check=True)
    assert {line.split()[0] for line in heads.stdout.splitlines()} == {task.repo.base_commit}
    assert task.grade.fail_to_pass and task.grade.pass_to_pass
    if task.kind == "migration":
        assert task.evidence_is_grade and task.grade.fail_to_pass == [ACCEPTANCE_ID]
    else:
        assert task.gold_patch and task.grade.patch and not set(task.grade.fail_to_pass) & set(task.evidence.pass_to_pass)
