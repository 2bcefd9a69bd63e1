"""Authoring many tasks in one command: a batch file, one entry per task (docs/authoring.md, "A batch file").

A YAML list (block or one ``- {...}`` flow mapping a line) whose entries name the repository, the commit (the fix
for ``tasks from-commit``, the base ref for ``tasks migration``), and optionally the task's id and its problem
statement, as text or as a file beside the batch. Every entry is checked before any task is made: a bad one is named
by ``file:line`` and nothing else of it runs.

Where ``from-commit`` falls back to the commit message for the problem statement it says so, and ``gives_away``
flags a message that names the changed code (a file, function or class the fix touches): such a message tends to
hand the agent the fix.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentbon.diffs import files_touched

TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class BatchEntry(BaseModel):
    """One task of a batch file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo: str = Field(min_length=1)
    """A local clone, a bare repository, a bundle or a git URL."""
    commit: str | None = None
    """``from-commit``: the fix commit (required); ``migration``: the base ref (default: the repository's HEAD)."""
    id: str | None = None
    """The task's id (default: from the repository's own name)."""
    problem: str | None = None
    """The problem statement's text (``from-commit``: default the commit message; ``migration``: the instruction)."""
    problem_file: str | None = None
    """The problem statement in a file, relative to the batch file."""
    where: str = ""
    """``file:line`` of the entry, for messages."""

    @model_validator(mode="after")
    def _one_problem(self) -> BatchEntry:
        if self.problem is not None and self.problem_file is not None:
            raise ValueError("give problem or problem_file, not both")
        if self.id is not None and not TASK_ID.fullmatch(self.id):
            raise ValueError(f"id {self.id!r}: letters, digits, '.', '_' and '-' only, starting with a letter or digit")
        return self

    def statement(self, batch: Path) -> str | None:
        """The problem statement the entry gives (read from ``problem_file``), else None."""
        if self.problem_file is None:
            return self.problem
        return (batch.parent / self.problem_file).read_text(encoding="utf-8")


def read_batch(path: Path, *, commit_required: bool) -> tuple[list[BatchEntry], list[str]]:
    """The entries of a batch file, and one error per bad entry (``file:line: what``): a missing ``commit`` where
    ``commit_required``, an unknown key, a ``problem_file`` that is not there, an id given twice."""
    text = path.read_text(encoding="utf-8")
    try:
        root, items = yaml.compose(text), yaml.safe_load(text)  # the nodes for line numbers, the values to check
    except yaml.YAMLError as e:
        return [], [f"{path}: not YAML: {e}"]
    if root is None:
        return [], []
    if not isinstance(root, yaml.SequenceNode):
        return [], [f"{path}: expected a list of entries (`- {{repo: ..., commit: ...}}`)"]
    entries, errors, ids = [], [], set()
    for node, data in zip(root.value, items, strict=True):
        where = f"{path}:{node.start_mark.line + 1}"
        if not isinstance(data, dict):
            errors.append(f"{where}: expected a mapping with repo and commit, got {type(data).__name__}")
            continue
        try:
            entry = BatchEntry.model_validate({**{str(k): v for k, v in data.items()}, "where": where})
        except ValidationError as e:
            problems = "; ".join(f"{'.'.join(map(str, x['loc'])) or 'entry'}: {x['msg']}" for x in e.errors())
            errors.append(f"{where}: {problems}")
            continue
        if commit_required and not entry.commit:
            errors.append(f"{where}: no commit: name the fix commit")
        elif entry.problem_file is not None and not (path.parent / entry.problem_file).is_file():
            errors.append(f"{where}: problem_file {entry.problem_file}: no such file beside {path.name}")
        elif entry.id is not None and entry.id in ids:
            errors.append(f"{where}: id {entry.id} is given twice")
        else:
            ids.add(entry.id)
            entries.append(entry)
    return entries, errors


_DEFINED = re.compile(r"^[ +-]\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.M)
_HUNK = re.compile(r"^@@[^@]*@@\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.M)


def changed_names(patch: str) -> set[str]:
    """What a fix touches, as a reader would name it: the files (and their module names) and the functions and
    classes it changes (defined in a hunk, changed or around the change, or named by the hunk's header)."""
    names = set()
    for path in files_touched(patch):
        name = Path(path).name
        names.add(name)
        if name.endswith(".py") and name not in ("__init__.py", "setup.py", "conftest.py"):
            names.add(name.removesuffix(".py"))
    names |= set(_DEFINED.findall(patch)) | set(_HUNK.findall(patch))
    return {n for n in names if len(n) > 2 and n not in ("__init__", "test", "main")}


def gives_away(message: str, fix: str) -> list[str]:
    """The changed code's names the commit message mentions (as whole words), sorted: a non-empty list means the
    message may hand the agent the fix."""
    return sorted(n for n in changed_names(fix) if re.search(rf"(?<![\w.]){re.escape(n)}(?!\w|\.\w)", message))
