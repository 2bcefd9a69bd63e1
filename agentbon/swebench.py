"""SWE-bench instances as agentbon tasks (the harness's dataset fields, as published on the Hugging Face hub).

Mapping: ``instance_id`` → task id; the repo on GitHub (or the mirror ``AGENTBON_SWEBENCH_MIRROR`` names) at
``base_commit``; the instance image (``image``, else the name the harness gives it) with the repo at
``/testbed``, or an agentbon ``environment`` to build where there is no prebuilt image; grade = FAIL_TO_PASS +
PASS_TO_PASS with ``test_patch``; ``patch`` → gold patch. An instance that carries the harness's
``eval_script`` and ``log_parser`` (SWE-bench 5.x datasets) is graded by that script and the harness's own
functions (runner ``swebench``, agentbon/verify/harness.py); one without them by agentbon's pytest runner.
Selection evidence = the PASS_TO_PASS tests that exist before the test patch, run without it (docs/swebench.md).
Keys agentbon does not use (``created_at``, dataset-specific extras) are ignored: published datasets differ in them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentbon.errors import TaskError
from agentbon.taskcheck import RECORD
from agentbon.types import Environment, RepoSource, Task, TestSet
from agentbon.verify.evalscript import without_test_patch
from agentbon.verify.testpatch import not_before

REQUIRED = ("instance_id", "repo", "base_commit", "problem_statement", "FAIL_TO_PASS", "PASS_TO_PASS", "test_patch")
"""Keys every SWE-bench instance must have (``patch``, ``hints_text`` and the rest are optional)."""
WORKDIR = "/testbed"
"""Where the SWE-bench instance images keep the repository."""
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_METADATA_KEYS = ("version", "environment_setup_commit", "created_at")
TASK_REPO_CONFIG = "sweb.yaml"
"""The file that marks a swebench 5.x task repository (beside ``tasks/<instance_id>/``)."""
TASK_REPO_KEY = "task_repo"
"""``Task.metadata`` key: the task repository an instance was loaded from (its images are built from it)."""
MIRROR_ENV = "AGENTBON_SWEBENCH_MIRROR"
"""Environment variable: where instances' repositories are cloned from instead of GitHub (see ``repo_url``)."""


def is_swebench_instance(record: dict[str, Any]) -> bool:
    """True for a SWE-bench instance (it has ``instance_id``; an agentbon record has ``task_id``)."""
    return "instance_id" in record and "task_id" not in record


def instance_image(instance_id: str) -> str:
    """The name the SWE-bench harness gives an instance's evaluation image (``__`` is spelt ``_1776_``)."""
    return f"swebench/sweb.eval.x86_64.{instance_id.replace('__', '_1776_')}:latest".lower()


def _string(record: dict[str, Any], key: str, source: str, required: bool = True) -> str:
    value = record.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise TaskError(source, key, f"must be a string, got {type(value).__name__}")
    return value


def _test_list(record: dict[str, Any], key: str, source: str) -> list[str]:
    """A test list given as a list or, as in the published datasets, a JSON-encoded string of one."""
    value = record[key]
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as err:
            raise TaskError(source, key, f"a string here must be a JSON list of test ids: {err.msg}") from err
    if not isinstance(value, list):
        raise TaskError(source, key, f"must be a list of test ids, got {type(value).__name__}")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise TaskError(source, f"{key}[{i}]", f"must be a non-empty string, got {item!r}")
    return value


def repo_url(repo: str) -> str:
    """Where to clone ``owner/name`` from: GitHub, or the mirror ``AGENTBON_SWEBENCH_MIRROR`` names (docs/swebench.md).

    The setting is a template (``/srv/mirrors/{repo}``, ``https://git.internal/{owner}/{name}.git``) or a
    prefix to which ``/owner/name`` is appended; a relative path is resolved against the instance file's folder.
    """
    mirror = os.environ.get(MIRROR_ENV, "").strip()
    if not mirror:
        return f"https://github.com/{repo}.git"
    owner, name = repo.split("/", 1)
    if "{" not in mirror:
        return f"{mirror.rstrip('/')}/{repo}"
    try:
        return mirror.format(repo=repo, owner=owner, name=name)
    except (KeyError, IndexError, ValueError) as err:
        raise TaskError(
            MIRROR_ENV, "repo", f"bad template {mirror!r} (placeholders: {{repo}} {{owner}} {{name}})"
        ) from err


def _environment(record: dict[str, Any], instance_id: str, source: str) -> Environment:
    """The instance's prebuilt image (``image``, else the harness's name), or an agentbon ``environment`` to build."""
    given = record.get("environment")
    if given is None:
        image = _string(record, "image", source, required=False) or instance_image(instance_id)
        return Environment(image=image, workdir=WORKDIR)
    if not isinstance(given, dict):
        raise TaskError(source, "environment", f"must be a mapping of Environment fields, got {type(given).__name__}")
    try:
        return Environment.model_validate({"workdir": WORKDIR, **given})
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in ("environment", *first["loc"]))
        raise TaskError(source, where, first["msg"]) from err


def _is_pytest_id(test_id: str) -> bool:
    """A pytest node id (``tests/test_x.py::test_y[p]``) or a test file: what agentbon's pytest runner can run."""
    return "::" in test_id or test_id.split("::")[0].endswith(".py")


def _pytest_ids_only(record: dict[str, Any], source: str, f2p: list[str], p2p: list[str]) -> None:
    """An instance without an eval script is graded by agentbon's pytest runner: ids it cannot run (Django's
    ``test_x (module.Class)``, SymPy's bare names) would all come out missing and every candidate fail, so they are
    refused at load, naming the fix."""
    for key, ids in (("FAIL_TO_PASS", f2p), ("PASS_TO_PASS", p2p)):
        bad = [t for t in ids if not _is_pytest_id(t)]
        if bad:
            raise TaskError(
                source, key,
                f"{bad[0]!r} is not a pytest node id, and the instance has no eval_script to run it with: use the "
                f"instance from a SWE-bench dataset that carries the harness's eval_script and log_parser (5.x), or "
                f"give pytest ids ({len(bad)} of {len(ids)} are not)",
            )  # fmt: skip


def _harness_sets(
    record: dict[str, Any], source: str, f2p: list[str], p2p: list[str], test_patch: str
) -> tuple[TestSet, TestSet]:
    """The evidence and grade ``TestSet``s: the harness's eval script when the instance has one, else pytest ids."""
    left_out = not_before(p2p, test_patch)
    kept = [t for t in p2p if t not in left_out]
    script = _string(record, "eval_script", source, required=False)
    if not script.strip():
        _pytest_ids_only(record, source, f2p, p2p)
        evidence = TestSet(pass_to_pass=kept, left_out=left_out)
        return evidence, TestSet(fail_to_pass=f2p, pass_to_pass=p2p, patch=test_patch)
    log_parser = _string(record, "log_parser", source) if "log_parser" in record else ""
    if not log_parser.strip():
        raise TaskError(source, "log_parser", "an instance with an eval_script needs the harness's log_parser")
    eval_type = _string(record, "eval_type", source, required=False) or "pass_and_fail"
    harness = TestSet(runner="swebench", log_parser=log_parser, eval_type=eval_type)
    grade = harness.model_copy(
        update={"fail_to_pass": f2p, "pass_to_pass": p2p, "patch": test_patch, "eval_script": script}
    )
    at_base, why = without_test_patch(script, test_patch)
    if at_base is None:
        left_out.update({t: f"cannot run before the test patch: {why}" for t in kept})
        return harness.model_copy(update={"left_out": left_out}), grade
    evidence = harness.model_copy(update={"pass_to_pass": kept, "eval_script": at_base, "left_out": left_out})
    return evidence, grade


def task_from_instance(record: dict[str, Any], source: str) -> Task:
    """An agentbon ``Task`` from one SWE-bench instance; ``TaskError`` names the first bad key."""
    missing = [key for key in REQUIRED if key not in record]
    if missing:
        raise TaskError(source, missing[0], f"missing required SWE-bench field (missing: {', '.join(missing)})")
    instance_id = _string(record, "instance_id", source)
    repo = _string(record, "repo", source)
    if not _REPO.fullmatch(repo):
        raise TaskError(source, "repo", f"must be 'owner/name', got {repo!r}")
    fail_to_pass = _test_list(record, "FAIL_TO_PASS", source)
    pass_to_pass = _test_list(record, "PASS_TO_PASS", source)
    test_patch = _string(record, "test_patch", source)
    gold = _string(record, "patch", source, required=False)
    metadata = {"repo": repo}
    metadata.update({key: str(record[key]) for key in _METADATA_KEYS if record.get(key) not in (None, "")})
    difficulty = record.get("difficulty")  # SWE-bench Verified's time-to-fix bucket ("<15 min fix")
    evidence, grade = _harness_sets(record, source, fail_to_pass, pass_to_pass, test_patch)
    return Task(
        task_id=instance_id,
        kind="swebench",
        problem_statement=_string(record, "problem_statement", source),
        repo=RepoSource(url=repo_url(repo), base_commit=_string(record, "base_commit", source)),
        environment=_environment(record, instance_id, source),
        evidence=evidence,
        grade=grade,
        gold_patch=gold or None,
        hints=_string(record, "hints_text", source, required=False),
        source=source,
        difficulty=difficulty if isinstance(difficulty, str) else None,
        metadata=metadata,
    )


def is_task_repo(path: Path) -> bool:
    """True for a swebench 5.x task repository: ``sweb.yaml`` beside a ``tasks/`` folder of instance folders."""
    return (path / TASK_REPO_CONFIG).is_file() and (path / "tasks").is_dir()


def task_repo_records(root: Path) -> Iterator[tuple[str, dict[str, Any] | TaskError]]:
    """Each instance a swebench 5.x task repository publishes, as the harness reads it, or the error of one.

    The harness's own reader and checks (``swebench.task``) decide: a task folder the checks turn down is an
    error naming the folder and every problem found, and the other instances still load; a problem of the
    repository itself (``sweb.yaml``) is one error. Instances in the ``deprecated`` split are skipped, as the
    harness skips them when it publishes or builds. ``test_assets/`` (binary files the harness stages at eval
    time) are not staged by agentbon, so an instance that has them is refused rather than graded without them.
    """
    try:
        from swebench.task.checks import DEPRECATED_SPLIT, check_task_repo
        from swebench.task.repo import ASSETS_SUBDIR, TASK_FILE, load_task, task_dirs
    except ImportError:
        source = str(root / TASK_REPO_CONFIG)
        problem = "a SWE-bench task repository is read with the harness: pip install 'agentbon[swebench]' (swebench>=5)"
        yield source, TaskError(source, RECORD, problem)
        return
    problems: dict[str, list[str]] = {}
    for problem in check_task_repo(root):
        if problem.severity == "error":
            problems.setdefault(problem.where, []).append(problem.message)
    repo_wide = {where: found for where, found in problems.items() if not where.startswith("tasks/")}
    if repo_wide:
        for where, found in repo_wide.items():
            yield str(root / where), TaskError(str(root / where), RECORD, "; ".join(found))
        return
    for folder in task_dirs(root):
        source = str(folder / TASK_FILE)
        if f"tasks/{folder.name}" in problems:
            yield source, TaskError(source, RECORD, "; ".join(problems[f"tasks/{folder.name}"]))
            continue
        try:
            record = load_task(folder)
        except (OSError, ValueError) as err:
            yield source, TaskError(source, RECORD, f"cannot read: {err}")
            continue
        if record.get("split") == DEPRECATED_SPLIT:
            continue
        assets = folder / ASSETS_SUBDIR
        if assets.is_dir() and any(assets.iterdir()):
            problem = "has test_assets/, which the harness stages at eval time and agentbon does not: not graded"
            yield source, TaskError(source, ASSETS_SUBDIR, problem)
            continue
        yield source, record


def task_from_task_repo(record: dict[str, Any], source: str, root: Path) -> Task:
    """``task_from_instance`` for an instance of a task repository, remembering the repository (image builds)."""
    task = task_from_instance(record, source)
    metadata = {**task.metadata, TASK_REPO_KEY: str(root.resolve())}
    return task.model_copy(update={"metadata": metadata})
