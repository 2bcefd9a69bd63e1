"""Task repositories at the base commit with a history that cannot show the future."""

from __future__ import annotations

import subprocess

import pytest
from sbx_repo import FUTURE_MARKER, git

from agentbon.errors import TaskError
from agentbon.sandbox.repo import mirror_dir, prepare_repo, refs_of, resolve_commit


def _has_object(repo, sha) -> bool:
    return subprocess.run(["git", "-C", str(repo), "cat-file", "-e", sha], capture_output=True).returncode == 0


def test_prepared_repo_has_one_branch_at_base_and_no_future(tiny_repo, tmp_path):
    sha = prepare_repo(str(tiny_repo.path), tiny_repo.base, tmp_path / "r")
    repo = tmp_path / "r"
    assert sha == tiny_repo.base
    assert refs_of(repo) == ["refs/heads/main"]
    assert git(repo, "rev-parse", "HEAD") == tiny_repo.base
    assert git(repo, "status", "--porcelain") == ""
    assert _has_object(repo, tiny_repo.first)  # the past is there
    assert not _has_object(repo, tiny_repo.future)  # the future is not, not even unreachable
    assert git(repo, "remote") == "" and git(repo, "tag") == "" and git(repo, "stash", "list") == ""
    assert git(repo, "reflog") == ""
    assert FUTURE_MARKER not in git(repo, "log", "--all", "-p")
    assert not (repo / ".git" / "FETCH_HEAD").exists()
    assert (repo / "data/blob.bin").read_bytes() == bytes(range(256))


def test_prepare_from_a_bundle_and_an_abbreviated_sha(tiny_repo, tmp_path):
    bundle = tmp_path / "repo.bundle"
    git(tiny_repo.path, "bundle", "create", str(bundle), "--all")
    assert resolve_commit(str(bundle), "main") == tiny_repo.base
    assert resolve_commit(str(bundle), tiny_repo.base[:8]) is None  # needs a clone to resolve
    sha = prepare_repo(str(bundle), tiny_repo.base[:8], tmp_path / "r")
    assert sha == tiny_repo.base and not _has_object(tmp_path / "r", tiny_repo.future)


def test_prepare_an_older_commit_hides_later_main_commits(tiny_repo, tmp_path):
    prepare_repo(str(tiny_repo.path), tiny_repo.first, tmp_path / "r")
    assert not _has_object(tmp_path / "r", tiny_repo.base)
    assert git(tmp_path / "r", "log", "--all", "--format=%s") == "first"


def test_resolve_refs_in_a_directory(tiny_repo):
    assert resolve_commit(str(tiny_repo.path), "main") == tiny_repo.base
    assert resolve_commit(str(tiny_repo.path), "v2") == tiny_repo.future
    assert resolve_commit(str(tiny_repo.path), tiny_repo.base.upper()) == tiny_repo.base


def test_unknown_commit_is_a_task_error_naming_the_field(tiny_repo, tmp_path):
    with pytest.raises(TaskError, match="repo.base_commit"):
        prepare_repo(str(tiny_repo.path), "0" * 40, tmp_path / "r")
    with pytest.raises(TaskError, match="repo.base_commit"):
        resolve_commit(str(tiny_repo.path), "no-such-branch")


def test_missing_source_is_a_task_error_naming_the_url(tmp_path):
    with pytest.raises(TaskError, match="repo.url: no such file"):
        prepare_repo(str(tmp_path / "nowhere"), "main", tmp_path / "r")


def test_remote_sources_are_mirrored_once_and_fetched_when_a_commit_is_missing(tiny_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBON_CACHE", str(tmp_path / "cache"))
    upstream = tmp_path / "upstream"
    git(tmp_path, "clone", "-q", "--bare", str(tiny_repo.path), str(upstream))
    url = f"file://{upstream}"
    assert prepare_repo(url, tiny_repo.base, tmp_path / "a") == tiny_repo.base
    mirror = mirror_dir(url)
    assert mirror.is_dir() and mirror.name.startswith("upstream-")
    # upstream moves on; the mirror learns the new commit only when a task asks for it
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(upstream), str(work))
    (work / "later.txt").write_text("later\n")
    git(work, "add", "later.txt")
    git(work, "commit", "-qm", "later")
    git(work, "push", "-q", "origin", "HEAD:main")
    later = git(work, "rev-parse", "HEAD")
    assert prepare_repo(url, later, tmp_path / "b") == later
    assert refs_of(tmp_path / "b") == ["refs/heads/main"] and (tmp_path / "b" / "later.txt").exists()
    assert not _has_object(tmp_path / "b", tiny_repo.future)
