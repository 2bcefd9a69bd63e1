"""Checks every loaded task passes, whatever its format: ids, commits, test ids, patches, local repo paths."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from agentbon.diffs import files_touched
from agentbon.types import FORMAT_VERSION, Task, TaskLoadError, TestSet
from agentbon.verify.testpatch import not_before

RECORD = "(record)"
"""The ``field`` of an error about a whole record (unreadable file, invalid YAML or JSON, not a mapping)."""
SAFE_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
"""Task ids become path segments and container labels: letters, digits and ``._-``, not starting with a dot."""
_SAFE_REF = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/^~-]*")
_REMOTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^[\w.-]+@[\w.-]+:")


class Invalid(Exception):
    """One task's errors (raised inside the loader; the suite keeps loading)."""

    def __init__(self, errors: list[TaskLoadError]):
        super().__init__("; ".join(map(str, errors)))
        self.errors = errors

    @classmethod
    def one(cls, source: str, field: str, problem: str) -> Invalid:
        return cls([TaskLoadError(source=source, field=field, problem=problem)])


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The record type found by following ``loc`` from ``Task`` (None where it leaves the records)."""
    model: type[BaseModel] = Task
    for part in loc:
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model


def pydantic_errors(err: ValidationError, source: str) -> list[TaskLoadError]:
    """A schema error as one ``TaskLoadError`` per problem, with the dotted field path."""
    out = []
    for item in err.errors():
        loc = tuple(item["loc"])
        field = ".".join(str(p) for p in loc) or RECORD
        if item["type"] == "extra_forbidden":
            model = _model_at(loc[:-1])
            allowed = ", ".join(sorted(set(model.model_fields) - {"source"})) if model else ""
            problem = "unknown field" + (f" (known fields: {allowed})" if allowed else "")
        elif item["type"] == "missing":
            problem = "missing required field"
        else:
            shown = repr(item.get("input"))
            problem = f"{item['msg']} (got {shown[:60] + '...' if len(shown) > 60 else shown})"
        out.append(TaskLoadError(source=source, field=field, problem=problem))
    return out


def is_remote(url: str) -> bool:
    """True for a URL git fetches over a transport (``https://``, ``ssh://``, ``git@host:path``)."""
    return bool(_REMOTE.match(url))


def _check_tests(tests: TestSet, role: str, source: str, errors: list[TaskLoadError]) -> TestSet:
    """Test ids usable on a command line, no test in both lists, and the files a test patch touches."""
    lists = {}
    for name in ("fail_to_pass", "pass_to_pass"):
        ids = getattr(tests, name)
        for i, test_id in enumerate(ids):
            if not test_id.strip() or "\n" in test_id:
                problem = "blank test id" if not test_id.strip() else "test id spans lines"
                errors.append(TaskLoadError(source=source, field=f"{role}.{name}[{i}]", problem=problem))
            elif test_id.startswith("-"):
                problem = f"test id {test_id!r} starts with '-' (would be read as a runner option)"
                errors.append(TaskLoadError(source=source, field=f"{role}.{name}[{i}]", problem=problem))
        lists[name] = list(dict.fromkeys(ids))  # a repeated id is harmless: keep one
    both = sorted(set(lists["fail_to_pass"]) & set(lists["pass_to_pass"]))
    if both:
        problem = f"listed in both fail_to_pass and pass_to_pass: {', '.join(both[:5])}"
        errors.append(TaskLoadError(source=source, field=f"{role}.pass_to_pass", problem=problem))
    if tests.runner == "command" and not (tests.command or "").strip():
        errors.append(TaskLoadError(source=source, field=f"{role}.command", problem="runner 'command' needs one"))
    if tests.runner == "swebench" and tests.tests:
        for name in ("eval_script", "log_parser"):
            if not getattr(tests, name).strip():
                problem = f"runner 'swebench' needs the harness's {name}"
                errors.append(TaskLoadError(source=source, field=f"{role}.{name}", problem=problem))
    files = list(tests.files)
    if tests.patch.strip():
        touched = files_touched(tests.patch)
        if not touched:
            errors.append(TaskLoadError(source=source, field=f"{role}.patch", problem="not a unified diff"))
        files = list(dict.fromkeys([*files, *touched]))
    return tests.model_copy(update={**lists, "files": files})


def _before_grade_patch(evidence: TestSet, task: Task) -> TestSet:
    """Evidence without the tests that exist only once the grade's test patch is applied (moved to ``left_out``)."""
    if task.evidence_is_grade or not task.grade.patch.strip():
        return evidence
    gone = not_before(evidence.tests, task.grade.patch, present=evidence.patch)
    if not gone:
        return evidence
    return evidence.model_copy(
        update={
            "fail_to_pass": [t for t in evidence.fail_to_pass if t not in gone],
            "pass_to_pass": [t for t in evidence.pass_to_pass if t not in gone],
            "left_out": {**evidence.left_out, **gone},
        }
    )


def finish_task(task: Task, base: Path, source: str) -> Task:
    """Resolve a relative repo path against ``base``, derive test-file lists, and check what the schema cannot."""
    errors: list[TaskLoadError] = []

    def bad(field: str, problem: str) -> None:
        errors.append(TaskLoadError(source=source, field=field, problem=problem))

    if task.version > FORMAT_VERSION:
        bad("version", f"format version {task.version} is newer than this agentbon reads ({FORMAT_VERSION})")
    if not SAFE_TASK_ID.fullmatch(task.task_id) or ".." in task.task_id:
        bad("task_id", f"{task.task_id!r} is not a safe path segment (letters, digits, '._-'; no leading '.')")
    commit = task.repo.base_commit
    if not commit.strip():
        bad("repo.base_commit", "missing (a commit sha or ref)")
    elif not _SAFE_REF.fullmatch(commit) or ".." in commit:
        bad("repo.base_commit", f"{commit!r} is not a commit sha or ref")
    url = task.repo.url
    repo = task.repo
    if not url.strip():
        bad("repo.url", "missing")
    elif not is_remote(url):
        local = Path(url.removeprefix("file://")) if url.startswith("file://") else base / url
        if not local.exists():
            bad("repo.url", f"not found: {local}")
        elif not url.startswith("file://"):
            repo = repo.model_copy(update={"url": str(local.resolve())})
    if not task.problem_statement.strip():
        bad("problem_statement", "empty")
    evidence = _before_grade_patch(_check_tests(task.evidence, "evidence", source, errors), task)
    grade = _check_tests(task.grade, "grade", source, errors)
    if grade.empty:
        bad("grade", "no tests to grade with (fail_to_pass, pass_to_pass and command are all empty)")
    if errors:
        raise Invalid(errors)
    return task.model_copy(update={"repo": repo, "evidence": evidence, "grade": grade, "source": source})
