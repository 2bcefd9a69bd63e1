"""Helpers for orchestration tests: small git-repo tasks and factories built from agentbon.testing fakes."""

from __future__ import annotations

import functools
from pathlib import Path

from agentbon.config import RunConfig, load_config
from agentbon.orchestrate import Factories
from agentbon.testing import (
    FakeAgent,
    FakeBackend,
    FakeSelector,
    FakeService,
    FakeVerifier,
    init_repo,
    no_report,
    planned_model,
)
from agentbon.types import RepoSource, Task, TestSet


def make_tasks(root: Path, ids: list[str], migration: bool = False) -> list[Task]:
    """Tasks over one tiny git repository."""
    repo = root / "repo"
    if not repo.exists():
        init_repo(repo, {"README.md": "hello\n"})
    commit = _head(repo)
    return [
        Task(
            task_id=tid, problem_statement=f"fix {tid}", repo=RepoSource(url=str(repo), base_commit=commit),
            kind="migration" if migration else "bugfix", grade=TestSet(command="true"), evidence_is_grade=migration,
        )
        for tid in ids
    ]


def _head(repo: Path) -> str:
    import subprocess

    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


def fakes(
    root: Path, table: dict[str, str] | None = None, default: str = "no fix", judge_down: Path | None = None, **backend
) -> Factories:
    """Factories of fakes: planned model replies, fake agent/backend/verifier/selector, no server, no report.

    ``judge_down``: while this file exists, the ``critic`` selector's judge fails on the tasks it names."""
    return Factories(
        backend=functools.partial(FakeBackend, root=str(root / "sandboxes"), **backend),
        agent=FakeAgent,
        model=functools.partial(planned_model, table=table or {}, default=default),
        verifier=functools.partial(FakeVerifier, log=str(root / "verify.log")),
        selector=functools.partial(FakeSelector, judge_down=str(judge_down) if judge_down else None),
        server=functools.partial(FakeService, restarts=str(root / "restarts.log")),
        report=no_report,
    )


def config(root: Path, *overrides: str, **direct) -> RunConfig:
    """A run config writing under ``root/runs`` with fake selectors."""
    return load_config(
        overrides=[f"run_dir={root / 'runs'}", "select.selectors=[first, oracle]", "model.name=fake", *overrides],
        **direct,
    )
