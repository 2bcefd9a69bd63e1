"""Fixtures for the agent tests: a tiny buggy repository in a fake sandbox or a Docker one, and a task whose secrets
must not leak."""

from __future__ import annotations

import uuid

import pytest

from agentbon.config import SandboxConfig
from agentbon.errors import EngineUnavailable
from agentbon.testing import FakeSandbox, init_repo
from agentbon.types import RepoSource, RolloutSpec, Task, TestSet

HIDDEN_TEST = "test_hidden_secret_zq81"
HIDDEN_PATCH = "HIDDEN_PATCH_MARKER_c3f1"
GOLD = "GOLD_PATCH_MARKER_9e2d"
HINT = "HINT_MARKER_77ab"

FILES = {
    "calc/__init__.py": "from calc.ops import add, sub\n",
    "calc/ops.py": (
        "from calc.util import check\n\n\n"
        "def add(a, b):\n"
        "    check(a, b)\n"
        "    return a - b\n\n\n"
        "def sub(a, b):\n"
        "    return a - b\n"
    ),
    "calc/util.py": "def check(*args):\n    for x in args:\n        assert isinstance(x, (int, float))\n",
    "docs/notes.md": "Notes about the project.\n",
    "tests/test_ops.py": "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    "README.md": "A calculator.\n",
}


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "repo"
    sha = init_repo(path, FILES)
    return path, sha


@pytest.fixture
def sandbox(repo):
    path, sha = repo
    with FakeSandbox(path, sha) as box:
        yield box


@pytest.fixture
def task(repo):
    path, sha = repo
    return Task(
        task_id="calc-add",
        problem_statement="`add(2, 3)` returns -1 instead of 5: the add function in calc subtracts.",
        repo=RepoSource(url=str(path), base_commit=sha),
        grade=TestSet(
            fail_to_pass=[f"tests/test_hidden.py::{HIDDEN_TEST}"],
            pass_to_pass=["tests/test_ops.py::test_add"],
            patch=f"diff --git a/tests/test_hidden.py b/tests/test_hidden.py\n+def {HIDDEN_TEST}(): # {HIDDEN_PATCH}\n",
            files=["tests/test_hidden.py"],
        ),
        gold_patch=f"diff --git a/calc/ops.py b/calc/ops.py\n-    return a - b\n+    return a + b  # {GOLD}\n",
        hints=f"look at ops ({HINT})",
    )


@pytest.fixture
def spec():
    return RolloutSpec(run_id="run1", task_id="calc-add", index=0, seed=7, model="scripted")


@pytest.fixture
def secrets(task):
    """Strings of the grading data that no prompt may contain."""
    return [GOLD, HIDDEN_PATCH, HIDDEN_TEST, task.grade.patch.splitlines()[0], task.gold_patch.splitlines()[1]]


@pytest.fixture(scope="module")
def backend():
    from agentbon.sandbox.docker import DockerBackend

    backend = DockerBackend(SandboxConfig(cpus=1.0, memory="512m"))
    try:
        backend.client.ping()
    except EngineUnavailable as e:
        pytest.skip(f"no Docker engine: {e}")
    labels = {"run_id": f"agenttest-{uuid.uuid4().hex[:8]}"}
    yield backend, labels
    backend.reap(labels)


@pytest.fixture
def docker_box(backend, task):
    docker_backend, labels = backend
    with docker_backend.open(task, {**labels, "rollout_id": "calc-add/0"}) as box:
        yield box
