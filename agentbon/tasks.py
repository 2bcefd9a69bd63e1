"""Task suites: load and validate tasks from task folders, JSONL records and SWE-bench instances.

``load_suite(path)`` accepts a directory of task folders, one task folder, one ``task.yaml``, a JSONL
file of ``Task`` records, SWE-bench instances (JSON list/object or JSONL, recognised by their
keys), or a swebench 5.x task repository (``sweb.yaml`` and ``tasks/<instance_id>/``). A malformed task becomes a ``TaskLoadError`` naming the file, the field and the problem and is
skipped; the others still load. Loading reads files only (no git), so it stays fast on big suites.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agentbon.errors import TaskError
from agentbon.swebench import (
    is_swebench_instance,
    is_task_repo,
    task_from_instance,
    task_from_task_repo,
    task_repo_records,
)
from agentbon.taskcheck import RECORD, Invalid, finish_task, pydantic_errors
from agentbon.types import Task, TaskLoadError, TestSet

TASK_FILE = "task.yaml"
"""The spec file of a task folder."""
_TASK_FOLDER_HINTS = ("repo.bundle", "gold.patch", "test.patch", "task.yml")


class SuiteError(TaskError):
    """A suite had malformed tasks and the caller asked for strictness; ``errors`` holds them all."""

    def __init__(self, errors: list[TaskLoadError]):
        first = errors[0]
        super().__init__(first.source, first.field, first.problem)
        self.errors = errors
        lines = [str(e) for e in errors[:20]] + ([f"... and {len(errors) - 20} more"] if len(errors) > 20 else [])
        self.args = (f"{len(errors)} malformed task(s):\n  " + "\n  ".join(lines),)


def raise_on_errors(errors: list[TaskLoadError]) -> None:
    """Raise ``SuiteError`` listing every error, if there are any (for callers that want strictness)."""
    if errors:
        raise SuiteError(errors)


def load_task(path: str | Path) -> Task:
    """Load exactly one task (folder, ``task.yaml`` or a one-record file); raise ``SuiteError`` when malformed."""
    tasks, errors = load_suite(path)
    raise_on_errors(errors)
    if len(tasks) != 1:
        raise TaskError(str(path), RECORD, f"expected one task, found {len(tasks)}")
    return tasks[0]


def load_suite(path: str | Path) -> tuple[list[Task], list[TaskLoadError]]:
    """Load every task under ``path``: the tasks that are valid, and one or more errors per malformed task."""
    path = Path(path)
    tasks: list[Task] = []
    errors: list[TaskLoadError] = []
    first_source: dict[str, str] = {}
    for source, loaded in _records(path):
        if isinstance(loaded, Invalid):
            errors.extend(loaded.errors)
        elif loaded.task_id in first_source:
            problem = f"duplicate task id {loaded.task_id!r} (first loaded from {first_source[loaded.task_id]})"
            errors.append(TaskLoadError(source=source, field="task_id", problem=problem, task_id=loaded.task_id))
        else:
            first_source[loaded.task_id] = source
            tasks.append(loaded)
    if not tasks and not errors:
        errors.append(TaskLoadError(source=str(path), field=RECORD, problem="no tasks found"))
    return _with_flaky_map(tasks, path, errors), errors


def _with_flaky_map(tasks: list[Task], path: Path, errors: list[TaskLoadError]) -> list[Task]:
    """Mark each task's flaky tests from the suite's map (``agentbon tasks validate`` writes it; verify/flaky.py)."""
    from agentbon.verify.flaky import MapError, map_path, read_map

    where = map_path(path)
    try:
        found = read_map(where)
    except MapError as e:
        errors.append(TaskLoadError(source=str(where), field=RECORD, problem=f"flaky map: {e}"))
        return tasks
    out = []
    for task in tasks:
        seen = found.get(task.task_id, {})
        if not seen:
            out.append(task)
            continue
        update = {"grade": _mark(task.grade, seen)}
        if not task.evidence_is_grade:
            update["evidence"] = _mark(task.evidence, seen)
        out.append(task.model_copy(update=update))
    return out


def _mark(tests: TestSet, seen: dict[str, str]) -> TestSet:
    return tests.model_copy(update={"flaky": {t: seen[t] for t in tests.tests if t in seen}})


def _records(path: Path) -> Iterator[tuple[str, Task | Invalid]]:
    """Each task (or its errors) found at ``path``, with its source."""
    if path.is_dir():
        if is_task_repo(path):
            yield from _from_task_repo(path)
            return
        if (path / TASK_FILE).is_file():
            yield _guard(str(path / TASK_FILE), partial(_from_task_yaml, path / TASK_FILE))
            return
        for child in sorted(path.iterdir()):
            if (child / TASK_FILE).is_file():
                yield _guard(str(child / TASK_FILE), partial(_from_task_yaml, child / TASK_FILE))
            elif child.is_dir() and any((child / hint).exists() for hint in _TASK_FOLDER_HINTS):
                yield str(child), Invalid.one(str(child), TASK_FILE, "task folder has no task.yaml")
    elif not path.exists():
        yield str(path), Invalid.one(str(path), RECORD, "no such file or directory")
    elif path.suffix in (".yaml", ".yml"):
        yield _guard(str(path), partial(_from_task_yaml, path))
    elif path.suffix == ".jsonl":
        yield from _from_jsonl(path)
    elif path.suffix == ".json":
        yield from _from_json(path)
    else:
        problem = "not a task suite (expected a directory of task folders, a task.yaml, a .jsonl or a .json file)"
        yield str(path), Invalid.one(str(path), RECORD, problem)


def _guard(source: str, load: Callable[[], Task], record: Any = None) -> tuple[str, Task | Invalid]:
    """Run one task's loader, turning its problems into errors so the rest of the suite still loads; each error
    names the id of ``record`` (the raw record) where it has one."""
    try:
        return source, load()
    except Invalid as invalid:
        failed = invalid
    except TaskError as err:
        failed = Invalid.one(err.source, err.field, err.problem)
    except OSError as err:
        failed = Invalid.one(source, RECORD, f"cannot read: {err.strerror or err}")
    task_id = _record_id(record)
    return source, Invalid([e.model_copy(update={"task_id": task_id}) for e in failed.errors]) if task_id else failed


def _record_id(record: Any) -> str | None:
    """A raw record's id (SWE-bench ``instance_id`` or agentbon ``task_id``), None where it has no usable one."""
    if not isinstance(record, dict):
        return None
    task_id = record.get("instance_id", record.get("task_id"))
    return task_id if isinstance(task_id, str) and task_id.strip() else None


def _read_text(base: Path, name: Any, source: str, field: str) -> str:
    """A file named (relative to the task folder) by a ``*_file`` field; a clear error when it is missing."""
    if not isinstance(name, str) or not name:
        raise TaskError(source, field, "must be a non-empty file name")
    file = base / name
    if not file.is_file():
        raise TaskError(source, field, f"file not found: {file}")
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise TaskError(source, field, f"cannot read {file}: {err}") from err


def _from_task_yaml(file: Path) -> Task:
    """One task in the task-folder format: ``*_file`` fields are read, and task_id must equal the folder name."""
    source = str(file)
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise TaskError(source, RECORD, f"invalid YAML{where}: {err.problem or err}") from err
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise TaskError(source, RECORD, f"invalid YAML: {err}") from err
    if not isinstance(data, dict):
        raise TaskError(source, RECORD, f"must be a mapping of fields, got {type(data).__name__}")
    data = dict(data)
    folder = file.parent
    if "gold_patch_file" in data:
        if "gold_patch" in data:
            raise TaskError(source, "gold_patch_file", "give gold_patch or gold_patch_file, not both")
        data["gold_patch"] = _read_text(folder, data.pop("gold_patch_file"), source, "gold_patch_file")
    for role in ("evidence", "grade"):
        tests = data.get(role)
        if isinstance(tests, dict) and "patch_file" in tests:
            tests = dict(tests)
            if "patch" in tests:
                raise TaskError(source, f"{role}.patch_file", "give patch or patch_file, not both")
            tests["patch"] = _read_text(folder, tests.pop("patch_file"), source, f"{role}.patch_file")
            data[role] = tests
    task = _validate(data, source)
    errors = []
    if file.name == TASK_FILE and task.task_id != folder.name:
        problem = f"must equal the task folder's name {folder.name!r}, got {task.task_id!r}"
        errors.append(TaskLoadError(source=source, field="task_id", problem=problem))
    try:
        task = finish_task(task, folder, source)
    except Invalid as invalid:
        errors.extend(invalid.errors)
    if errors:
        raise Invalid(errors)
    return task


def _validate(data: dict[str, Any], source: str) -> Task:
    """A ``Task`` from a mapping, every schema problem reported with its dotted field path."""
    data = {**data, "source": source}
    try:
        return Task.model_validate(data)
    except ValidationError as err:
        raise Invalid(pydantic_errors(err, source)) from err


def _from_record(record: Any, source: str, base: Path) -> Task:
    """One JSON record: a SWE-bench instance (recognised by its keys) or an agentbon ``Task``."""
    if not isinstance(record, dict):
        raise TaskError(source, RECORD, f"must be a JSON object, got {type(record).__name__}")
    task = task_from_instance(record, source) if is_swebench_instance(record) else _validate(record, source)
    return finish_task(task, base, source)


def _from_task_repo(root: Path) -> Iterator[tuple[str, Task | Invalid]]:
    """The instances of a swebench 5.x task repository; a task folder its checks turn down is an error."""
    for source, record in task_repo_records(root):
        if isinstance(record, TaskError):
            yield source, Invalid.one(record.source, record.field, record.problem)
        else:
            yield _guard(source, partial(_finish_instance, record, source, root), record)


def _finish_instance(record: dict[str, Any], source: str, root: Path) -> Task:
    return finish_task(task_from_task_repo(record, source, root), root, source)


def _from_jsonl(file: Path) -> Iterator[tuple[str, Task | Invalid]]:
    """One task per non-blank line; a bad line is an error at ``file:line`` and the other lines still load."""
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        yield str(file), Invalid.one(str(file), RECORD, f"cannot read: {err}")
        return
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        source = f"{file}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            yield source, Invalid.one(source, RECORD, f"invalid JSON at column {err.colno}: {err.msg}")
            continue
        yield _guard(source, partial(_from_record, record, source, file.parent), record)


def _from_json(file: Path) -> Iterator[tuple[str, Task | Invalid]]:
    """A JSON object (one task) or a list of them (sources ``file[i]``)."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        yield str(file), Invalid.one(str(file), RECORD, f"cannot read: {err}")
        return
    except json.JSONDecodeError as err:
        problem = f"invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}"
        yield str(file), Invalid.one(str(file), RECORD, problem)
        return
    if isinstance(data, list):
        for index, record in enumerate(data):
            source = f"{file}[{index}]"
            yield _guard(source, partial(_from_record, record, source, file.parent), record)
    else:
        yield _guard(str(file), partial(_from_record, data, str(file), file.parent), data)
