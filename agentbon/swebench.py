"""SWE-bench instances as agentbon tasks (the harness's dataset fields, as published on the Hugging Face hub).

Mapping: ``instance_id`` → task id; the repo on GitHub at ``base_commit``; the instance image the
SWE-bench harness builds (``swebench/sweb.eval.x86_64.<id>:latest``) with the repo at ``/testbed``;
selection evidence = the PASS_TO_PASS tests (existing tests a deployed system could run); grade =
FAIL_TO_PASS + PASS_TO_PASS with ``test_patch`` applied; ``patch`` → gold patch. Keys agentbon does
not use (``created_at``, dataset-specific extras) are ignored: published datasets differ in them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentbon.errors import TaskError
from agentbon.types import Environment, RepoSource, Task, TestSet

REQUIRED = ("instance_id", "repo", "base_commit", "problem_statement", "FAIL_TO_PASS", "PASS_TO_PASS", "test_patch")
"""Keys every SWE-bench instance must have (``patch``, ``hints_text`` and the rest are optional)."""
WORKDIR = "/testbed"
"""Where the SWE-bench instance images keep the repository."""
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_METADATA_KEYS = ("version", "environment_setup_commit", "created_at")


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
    return Task(
        task_id=instance_id,
        kind="swebench",
        problem_statement=_string(record, "problem_statement", source),
        repo=RepoSource(url=f"https://github.com/{repo}.git", base_commit=_string(record, "base_commit", source)),
        environment=Environment(image=instance_image(instance_id), workdir=WORKDIR),
        evidence=TestSet(pass_to_pass=pass_to_pass),
        grade=TestSet(fail_to_pass=fail_to_pass, pass_to_pass=pass_to_pass, patch=test_patch),
        gold_patch=gold or None,
        hints=_string(record, "hints_text", source, required=False),
        source=source,
        difficulty=difficulty if isinstance(difficulty, str) else None,
        metadata=metadata,
    )
