"""Helpers for the sandbox tests: a tiny git repository with a past and a future, and a task on it."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from agentbon.types import RepoSource, Task, TestSet

GOLD_MARKER = "GOLD_PATCH_MARKER_5b1e"
HIDDEN_MARKER = "HIDDEN_TEST_MARKER_a7c4"
FUTURE_MARKER = "FUTURE_COMMIT_MARKER_0d9f"

BASE_FILES = {
    "pkg/__init__.py": "",
    "pkg/mod.py": "def double(x):\n    return x + x\n",
    "tests/test_mod.py": "from pkg.mod import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
    "README.md": "tiny\n",
    "data/blob.bin": "",
}


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    # Fixed dates: the same repository (and so the same cached task image) in every test session.
    env |= {"GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@dataclass
class TinyRepo:
    path: Path
    base: str
    """The base commit (tip of ``main``)."""
    first: str
    """The commit before the base."""
    future: str
    """A later commit on another branch, also tagged: must never reach a sandbox."""


def make_repo(path: Path) -> TinyRepo:
    """A repository with two commits on ``main`` and a future commit on branch ``fix`` (tagged ``v2``)."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in BASE_FILES.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    (path / "data/blob.bin").write_bytes(bytes(range(256)))
    git(path, "add", "-A")
    git(path, "commit", "-qm", "first")
    first = git(path, "rev-parse", "HEAD")
    (path / "README.md").write_text("tiny package\n")
    git(path, "commit", "-qam", "second")
    base = git(path, "rev-parse", "HEAD")
    git(path, "checkout", "-q", "-b", "fix")
    (path / "pkg/mod.py").write_text(f"def double(x):\n    return 2 * x  # {FUTURE_MARKER}\n")
    git(path, "commit", "-qam", f"the fix {FUTURE_MARKER}")
    future = git(path, "rev-parse", "HEAD")
    git(path, "tag", "v2")
    git(path, "checkout", "-q", "main")
    return TinyRepo(path, base, first, future)


def make_task(repo: TinyRepo, task_id: str = "tiny", **environment) -> Task:
    """A task on the tiny repository whose gold patch and hidden tests carry markers that must never leak."""
    return Task(
        task_id=task_id,
        problem_statement="double() should double.",
        repo=RepoSource(url=str(repo.path), base_commit=repo.base),
        environment=environment,
        grade=TestSet(fail_to_pass=["tests/test_hidden.py::test_x"], patch=f"+# {HIDDEN_MARKER}\n"),
        gold_patch=f"+# {GOLD_MARKER}\n",
    )
