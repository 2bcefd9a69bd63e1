"""A task's repository at its base commit, with a history that cannot show the future.

The source (a local directory, a ``.bundle`` file or a git URL) is cloned on the host with GitPython; the
sandbox gets a fresh repository whose only ref is one branch at the base commit: no other branches, tags or
remotes, reflog expired, nothing unreachable. An agent running ``git log --all`` sees the past and nothing else.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

import git

from agentbon.errors import TaskError
from agentbon.sandbox.common import file_lock, slug
from agentbon.types import is_git_url

FULL_SHA = re.compile(r"[0-9a-fA-F]{40}")
BRANCH = "main"
"""The one branch of a prepared repository, at the base commit."""


def _check_source(source: str) -> None:
    if not is_git_url(source) and not Path(source).exists():
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
        listing = str(git.Git().bundle("list-heads", str(path)) if path.is_file() else git.Git().ls_remote(source))
    except (git.GitCommandError, git.InvalidGitRepositoryError, ValueError, git.BadName) as e:
        raise TaskError(source, "repo.base_commit", f"cannot resolve {ref!r}: {e}") from e
    heads = {}
    for line in listing.splitlines():
        if len(fields := line.split(None, 1)) == 2:
            heads[fields[1]] = fields[0]
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
    raise TaskError(source, "repo.base_commit", f"commit {ref!r} not found in the repository")


def mirror_dir(url: str) -> Path:
    """Where the bare mirror of a remote repository is kept (``$AGENTBON_CACHE`` or ``~/.cache/agentbon``)."""
    root = Path(os.environ.get("AGENTBON_CACHE") or Path.home() / ".cache" / "agentbon") / "mirrors"
    name = slug(url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"), 40)
    return root / f"{name}-{hashlib.sha256(url.encode()).hexdigest()[:12]}.git"


def _local(source: str, ref: str) -> str:
    """A local path to clone from: the source itself, or for a URL a cached bare mirror that has ``ref``.

    Many tasks share a repository (a SWE-bench suite has hundreds per repository): it is downloaded once, and
    fetched again only when a task needs a commit the mirror lacks.
    """
    if not is_git_url(source):
        return source
    mirror = mirror_dir(source)
    with file_lock(str(mirror)):
        try:
            if not mirror.exists():
                partial = mirror.with_suffix(".partial")
                shutil.rmtree(partial, ignore_errors=True)
                partial.parent.mkdir(parents=True, exist_ok=True)
                git.Repo.clone_from(source, partial, mirror=True, quiet=True).close()
                partial.rename(mirror)
            repo = git.Repo(mirror)
            if _find(repo, ref) is None:
                repo.git.fetch("--quiet", "origin")
            if _find(repo, ref) is None and FULL_SHA.fullmatch(ref):
                try:  # a commit no branch names (servers such as GitHub serve reachable shas on request)
                    repo.git.fetch("--quiet", "origin", f"{ref}:refs/agentbon/fetched/{ref}")
                except git.GitCommandError:
                    pass  # reported as a missing commit below
            repo.close()
        except git.GitCommandError as e:
            raise TaskError(source, "repo.url", f"cannot clone: {e.stderr.strip() or e}") from e
    return str(mirror)


def prepare_repo(source: str, ref: str, dest: Path) -> str:
    """Make ``dest`` a fresh repository at ``ref`` of ``source`` with a hygienic history; return the full sha."""
    _check_source(source)
    dest = Path(dest)
    local = _local(source, ref)
    with tempfile.TemporaryDirectory(prefix="agentbon-clone-") as tmp:
        try:
            clone = git.Repo.clone_from(local, Path(tmp) / "src", bare=True, quiet=True)
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
