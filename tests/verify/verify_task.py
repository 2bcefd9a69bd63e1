"""Helpers for the verifier tests: a tiny real task (git repo with a bug, hidden tests, gold patch), a clone backend.

Fixtures live in conftest.py: ``backend`` is parametrised over ``fake`` (host subprocesses in a clone,
agentbon.testing.FakeSandbox) and ``docker`` (the real Docker backend, marker ``docker``). Exploits that
could harm the host (fork bombs, writes outside the repository) use ``docker_backend`` only.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path

import pytest

from agentbon.testing import FakeSandbox, init_repo
from agentbon.types import RepoSource, Rollout, Task, TestSet

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}

BASE_FILES = {
    "calc/__init__.py": "",
    "calc/ops.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
    "tests/test_ops.py": "from calc.ops import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
    "README.md": "calc\n",
}
HIDDEN = {"tests/test_hidden.py": "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"}
GOLD = {"calc/ops.py": BASE_FILES["calc/ops.py"].replace("a - b", "a + b")}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True, text=True).stdout


def make_patch(repo: Path, edits: dict[str, str | None], scratch: Path) -> str:
    """A git diff against the repo's HEAD that writes (or, for None, deletes) the given files."""
    if scratch.exists():
        subprocess.run(["rm", "-rf", str(scratch)], check=True)
    subprocess.run(["git", "clone", "-q", str(repo), str(scratch)], check=True, capture_output=True)
    for name, text in edits.items():
        target = scratch / name
        if text is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    git(scratch, "add", "-A")
    return git(scratch, "diff", "--cached", "--binary", "HEAD")


class CalcTask:
    """The task plus helpers to make candidate rollouts for it."""

    def __init__(self, root: Path):
        self.root = root
        self.repo = root / "repo"
        self.base = init_repo(self.repo, BASE_FILES)
        self._n = itertools.count()
        test_patch = self.patch(HIDDEN)
        grade = TestSet(
            fail_to_pass=["tests/test_hidden.py::test_add"],
            pass_to_pass=["tests/test_ops.py::test_mul"],
            patch=test_patch,
            files=["tests/test_hidden.py"],
        )
        evidence = TestSet(pass_to_pass=["tests/test_ops.py::test_mul"])
        self.task = Task(
            task_id="calc-add",
            problem_statement="add() subtracts instead of adding.",
            repo=RepoSource(url=str(self.repo), base_commit=self.base),
            evidence=evidence,
            grade=grade,
            gold_patch=self.patch(GOLD),
        )

    def patch(self, edits: dict[str, str | None]) -> str:
        return make_patch(self.repo, edits, self.root / f"scratch{next(self._n)}")

    def rollout(self, patch: str, index: int | None = None) -> Rollout:
        return Rollout(
            run_id="r",
            task_id=self.task.task_id,
            index=next(self._n) if index is None else index,
            status="submitted",
            patch=patch,
        )


class CloneBackend:
    """Opens a FakeSandbox on a fresh clone of the task repo at its base commit (one per open)."""

    isolation = "fake (none)"

    def __init__(self, root: Path):
        self.root = root
        self.opened = 0

    def prepare(self, task: Task) -> str:
        return task.repo.url

    def open(self, task: Task, labels: dict[str, str] | None = None) -> FakeSandbox:
        self.opened += 1
        dest = self.root / f"sandbox{self.opened}"
        subprocess.run(["git", "clone", "-q", task.repo.url, str(dest)], check=True, capture_output=True)
        git(dest, "checkout", "-q", task.repo.base_commit)
        return FakeSandbox(dest, task.repo.base_commit)

    def reap(self, labels: dict[str, str] | None = None) -> int:
        return 0


def own_verify_labels() -> dict[str, str]:
    """Labels of the verification containers this test session started: never reap another session's (two suites
    may share one Docker engine, and a reap by role alone removed the other's containers mid-test)."""
    return {"role": "verify", "session": os.environ["AGENTBON_SESSION"]}


def docker_backend_or_skip(**config):
    """The real Docker backend (``config`` overrides the sandbox settings); skipped without an engine."""
    try:
        from agentbon.config import SandboxConfig
        from agentbon.sandbox.docker import DockerBackend
    except ImportError as e:
        pytest.skip(f"docker backend not available: {e}")
    backend = DockerBackend(SandboxConfig(**{"cpus": 1.0, "memory": "1g", "pids": 128, **config}))
    try:
        backend.client.ping()
    except Exception as e:  # the engine is not reachable on this machine
        pytest.skip(f"docker engine not reachable: {e}")
    yield backend
    backend.reap(own_verify_labels())
