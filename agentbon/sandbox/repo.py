"""A task's repository at its base commit, with a history that cannot show the future.

The source (a local directory, a ``.bundle`` file or a git URL) is cloned on the host with GitPython; the
sandbox gets a fresh repository whose only ref is one branch at the base commit: no other branches, tags or
remotes, reflog expired, nothing unreachable. An agent running ``git log --all`` sees the past and nothing else.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import git

from agentbon.errors import TaskError

FULL_SHA = re.compile(r"[0-9a-fA-F]{40}")
BRANCH = "main"
"""The one branch of a prepared repository, at the base commit."""


def _is_url(source: str) -> bool:
    return "://" in source or re.match(r"^[\w.-]+@[\w.-]+:", source) is not None


def _check_source(source: str) -> None:
    if not _is_url(source) and not Path(source).exists():
        raise TaskError(source, "repo.url", "no such file or directory")


def resolve_commit(source: str, ref: str) -> str | None:
    """The full sha of ``ref`` in ``source`` without cloning, where that is cheap; ``None`` when it is not."""
    if FULL_SHA.fullmatch(ref):
        return ref.lower()
    _check_source(source)
    path = Path(source)
    try:
        if path.is_dir():
            return git.Repo(path).commit(ref).hexsha
        listing = git.Git().bundle("list-heads", str(path)) if path.is_file() else git.Git().ls_remote(source)
    except (git.GitCommandError, git.InvalidGitRepositoryError, ValueError, git.BadName) as e:
        raise TaskError(source, "repo.base_commit", f"cannot resolve {ref!r}: {e}") from e
    heads = dict(reversed(line.split(None, 1)) for line in listing.splitlines() if line.strip())
    for name in (ref, f"refs/heads/{ref}", f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}"):
        if name in heads:
            return heads[name]
    return None  # an abbreviated sha, or a ref the listing does not name: needs a clone


def _find(clone: git.Repo, ref: str) -> str | None:
    try:
        return clone.git.rev_parse("--verify", "--quiet", f"{ref}^{{commit}}")
    except git.GitCommandError:
        return None


def _commit_in(clone: git.Repo, source: str, ref: str) -> str:
    for name in dict.fromkeys([ref, ref.removeprefix("origin/")]):
        if sha := _find(clone, name):
            return sha
    if FULL_SHA.fullmatch(ref) and _is_url(source):
        try:  # a commit no branch names (servers such as GitHub serve reachable shas on request)
            clone.git.fetch("--quiet", source, ref)
        except git.GitCommandError:
            pass
        if sha := _find(clone, ref):
            return sha
    raise TaskError(source, "repo.base_commit", f"commit {ref!r} not found in the repository")


def prepare_repo(source: str, ref: str, dest: Path) -> str:
    """Make ``dest`` a fresh repository at ``ref`` of ``source`` with a hygienic history; return the full sha."""
    _check_source(source)
    dest = Path(dest)
    with tempfile.TemporaryDirectory(prefix="agentbon-clone-") as tmp:
        try:
            clone = git.Repo.clone_from(source, Path(tmp) / "src", bare=True, quiet=True)
        except git.GitCommandError as e:
            raise TaskError(source, "repo.url", f"cannot clone: {e.stderr.strip() or e}") from e
        sha = _commit_in(clone, source, ref)
        clone.git.update_ref("refs/agentbon/base", sha)
        if dest.exists():
            shutil.rmtree(dest)
        repo = git.Repo.init(dest, initial_branch=BRANCH)
        # Only objects reachable from the base commit travel: the future never enters the new repository.
        repo.git.fetch(
            "--quiet", "--no-tags", "--update-head-ok", clone.git_dir, f"refs/agentbon/base:refs/heads/{BRANCH}"
        )
    repo.git.reset("--quiet", "--hard", BRANCH)
    repo.git.reflog("expire", "--expire=now", "--all")
    repo.git.prune("--expire=now")
    (Path(repo.git_dir) / "FETCH_HEAD").unlink(missing_ok=True)  # names the host path it came from
    repo.close()
    return sha


def refs_of(path: Path) -> list[str]:
    """Every ref in the repository at ``path`` (a hygienic one has exactly one branch)."""
    out = git.Repo(path).git.for_each_ref("--format=%(refname)")
    return out.split()
