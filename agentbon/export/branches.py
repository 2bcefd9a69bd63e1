"""Winners for migration review: git branches in the target repositories, or patch files.

A branch ``agentbon/<run_id>/<task_id>`` points at a commit whose parent is the task's base commit
and whose tree is the base plus the winning patch. It is built with a private index file
(``read-tree``, ``apply --cached``, ``write-tree``, ``commit-tree``, ``update-ref``), so the
repository's working tree, index and HEAD are never touched — safe on a developer's checkout.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import git

from agentbon.errors import ExportError
from agentbon.export.common import Winner, as_patch_file, flag_note, flagged_policy, pick_selector, winners
from agentbon.files import write_atomic
from agentbon.report.data import RunData

IDENTITY = {
    "GIT_AUTHOR_NAME": "agentbon",
    "GIT_AUTHOR_EMAIL": "agentbon@localhost",
    "GIT_COMMITTER_NAME": "agentbon",
    "GIT_COMMITTER_EMAIL": "agentbon@localhost",
}


@dataclass
class BranchResult:
    created: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    """task id → why no branch (no winner, empty patch, not resolved)."""
    failed: dict[str, str] = field(default_factory=dict)
    """task id → what went wrong (base commit in no repository, patch does not apply, branch exists)."""
    flagged: dict[str, str] = field(default_factory=dict)
    """task id → the flags of a winner that was exported marked, and the files grading undid."""


def _mark(result: BranchResult, w: Winner) -> None:
    if w.flags or w.undone:
        kinds = ", ".join(dict.fromkeys(f.kind for f in w.flags))
        result.flagged[w.task_id] = kinds + (f"; grading undid: {', '.join(w.undone)}" if w.undone else "")


def branch_name(run_id: str, task_id: str) -> str:
    """``agentbon/<run_id>/<task_id>``, with characters git refuses in a ref replaced by ``-``."""

    def clean(part: str) -> str:
        part = re.sub(r"[^A-Za-z0-9._-]+", "-", part)
        part = re.sub(r"\.{2,}", ".", part).strip(".-")
        return (part[:-5] + "-lock") if part.endswith(".lock") else part or "x"

    return f"agentbon/{clean(run_id)}/{clean(task_id)}"


def _message(data: RunData, w: Winner, selector: str) -> str:
    grade = f"grade: {w.grade.status} ({w.grade.reason})" if w.grade else "grade: none"
    evidence = data.evidence.get(w.rollout.rollout_id) if w.rollout else None
    task = data.tasks.get(w.task_id)
    problem = (task.problem_statement.strip().splitlines() or [""])[0][:200] if task else ""
    note = flag_note(w.flags, w.undone)
    return (
        f"agentbon: {w.task_id}\n\n{problem}\n\nrun {data.run_id}, rollout {w.rollout.rollout_id if w.rollout else '?'} "
        f"chosen by {selector}\n{grade}\nevidence: {evidence.status if evidence else 'none'}\n"
        + (f"\n{note}\n" if note else "")
    )


def _find_repo(repos: list[git.Repo], sha: str) -> tuple[git.Repo, str] | None:
    for repo in repos:
        try:
            return repo, repo.commit(sha).hexsha
        except (git.BadName, ValueError, git.GitCommandError):
            continue
    return None


def _commit(repo: git.Repo, base: str, patch: str, message: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**IDENTITY, "GIT_INDEX_FILE": os.path.join(tmp, "index")}
        patch_file = Path(tmp) / "winner.patch"
        patch_file.write_text(as_patch_file(patch))
        repo.git.read_tree(base, env=env)
        repo.git.apply("--cached", "--whitespace=nowarn", str(patch_file), env=env)
        tree = repo.git.write_tree(env=env)
        return repo.git.commit_tree(tree, "-p", base, "-m", message, env=env)


def export_branches(
    data: RunData,
    repos: list[Path],
    selector: str | None = None,
    resolved_only: bool = False,
    force: bool = False,
    flagged: str | None = None,
) -> BranchResult:
    """Create ``agentbon/<run_id>/<task_id>`` in whichever of ``repos`` holds each task's base commit.

    A flagged winner's commit message lists its flags and the files grading undid; with ``flagged`` (or the run's
    ``export.flagged``) ``omit``, a winner with a flag outside ``select.allow_flags`` gets no branch.
    """
    if not repos:
        raise ExportError("--repo: give at least one target repository")
    opened = []
    for path in repos:
        try:
            opened.append(git.Repo(path))
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as e:
            raise ExportError(f"--repo {path}: not a git repository") from e
    name = pick_selector(data, selector)
    omit = flagged_policy(data, flagged) == "omit"
    result = BranchResult()
    for w in winners(data, name):
        if why := _skip_reason(w, resolved_only, omit):
            result.skipped[w.task_id] = why
            continue
        task = data.tasks.get(w.task_id)
        found = _find_repo(opened, task.repo.base_commit) if task else None
        if found is None:
            base = task.repo.base_commit if task else "?"
            result.failed[w.task_id] = f"base commit {base} is in none of the --repo repositories"
            continue
        repo, base = found
        ref = f"refs/heads/{branch_name(data.run_id, w.task_id)}"
        try:
            commit = _commit(repo, base, w.patch, _message(data, w, name))
        except git.GitCommandError as e:
            result.failed[w.task_id] = f"patch does not apply on {base[:12]}: {str(e.stderr).strip()[-300:]}"
            continue
        existing = _resolve(repo, ref)
        if existing and repo.commit(existing).tree.hexsha == repo.commit(commit).tree.hexsha:
            result.unchanged.append(ref[len("refs/heads/") :])
            continue
        if existing and not force:
            result.failed[w.task_id] = f"{ref[len('refs/heads/') :]} exists with other content (use --force)"
            continue
        repo.git.update_ref(ref, commit)
        result.created.append(ref[len("refs/heads/") :])
        _mark(result, w)
    return result


def _resolve(repo: git.Repo, ref: str) -> str | None:
    try:
        return repo.git.rev_parse("--verify", "--quiet", ref)
    except git.GitCommandError:
        return None


def _skip_reason(w: Winner, resolved_only: bool, omit: bool = False) -> str | None:
    if w.left_out:
        return f"selection failed on infrastructure ({w.left_out}); run the same command to select it"
    if w.rollout is None:
        return "no winner"
    if not w.patch.strip():
        return "empty patch"
    if resolved_only and not (w.grade and w.grade.status == "pass"):
        return f"not resolved (grade: {w.grade.status if w.grade else 'none'})"
    if omit and w.blocking:
        return f"flagged: {', '.join(w.blocking)} (export.flagged: omit)"
    return None


def export_patches(
    data: RunData, out_dir: Path, selector: str | None = None, resolved_only: bool = False, flagged: str | None = None
) -> BranchResult:
    """Write ``<task_id>.patch`` per winner (``git apply``-able, with a header) and ``winners.jsonl`` to review from.

    Each ``winners.jsonl`` row carries the winner's ``flags`` (kinds) and ``undone`` files; ``flagged`` as for
    :func:`export_branches`.
    """
    name = pick_selector(data, selector)
    omit = flagged_policy(data, flagged) == "omit"
    out_dir.mkdir(parents=True, exist_ok=True)
    result, index = BranchResult(), []
    for w in winners(data, name):
        if why := _skip_reason(w, resolved_only, omit):
            result.skipped[w.task_id] = why
            continue
        assert w.rollout is not None
        file = out_dir / f"{branch_name(data.run_id, w.task_id).rsplit('/', 1)[1]}.patch"
        header = "".join(f"# {line}\n" if line else "#\n" for line in _message(data, w, name).splitlines())
        write_atomic(file, header + "\n" + as_patch_file(w.patch))  # git apply skips text before the first diff
        evidence = data.evidence.get(w.rollout.rollout_id)
        task = data.tasks.get(w.task_id)
        index.append({
            "task_id": w.task_id, "rollout_id": w.rollout.rollout_id, "selector": name, "patch": file.name,
            "base_commit": task.repo.base_commit if task else None, "grade": w.grade.status if w.grade else None,
            "evidence": evidence.status if evidence else None, "flags": list(dict.fromkeys(f.kind for f in w.flags)),
            "undone": w.undone,
        })  # fmt: skip
        result.created.append(file.name)
        _mark(result, w)
    write_atomic(out_dir / "winners.jsonl", "".join(json.dumps(row) + "\n" for row in index))
    return result
