"""Winners as git branches (working tree untouched) or patch files, through GitPython."""

from __future__ import annotations

import json
import subprocess

import git
from synth import make_repo, make_run
from typer.testing import CliRunner

from agentbon.cli import app
from agentbon.export import branch_name, export_branches, export_patches
from agentbon.report.data import load_run

GRID = {"mig-1": "FPF", "mig-2": "FFF", "mig-3": "III", "mig-4": "EPF"}
SCORES = {"tests": {"mig-1": [0, 1, 0], "mig-2": [1, 0, 0], "mig-4": [1, 0, 0]}}


def test_branches_from_base_commit_with_the_patch(tmp_path):
    base, path = make_repo(tmp_path / "repo", list(GRID))
    repo = git.Repo(path)
    (path / "mig-1.py").write_text("local edit, not committed\n")  # the user's work in progress
    head_before = repo.head.commit.hexsha
    data = load_run(make_run(tmp_path, GRID, SCORES, repo=(base, path)))
    result = export_branches(data, [path])
    assert result.created == ["agentbon/run-synth/mig-1", "agentbon/run-synth/mig-2"]
    assert result.skipped == {"mig-3": "no winner", "mig-4": "empty patch"}
    commit = repo.commit("agentbon/run-synth/mig-1")
    assert commit.parents[0].hexsha == base
    assert (commit.tree / "mig-1.py").data_stream.read() == b"VALUE = 2\n"  # rollout 1's patch
    assert "chosen by tests" in commit.message and "grade: pass" in commit.message
    # Nothing of the user's checkout moved.
    assert repo.head.commit.hexsha == head_before and (path / "mig-1.py").read_text() == "local edit, not committed\n"
    again = export_branches(data, [path])
    assert again.created == [] and len(again.unchanged) == 2


def test_resolved_only_and_repo_without_the_base(tmp_path):
    base, path = make_repo(tmp_path / "repo", list(GRID))
    _, other = make_repo(tmp_path / "other", ["x"])
    data = load_run(make_run(tmp_path, GRID, SCORES, repo=(base, path)))
    result = export_branches(data, [other], resolved_only=True)
    assert result.skipped["mig-2"] == "not resolved (grade: fail)"
    assert "is in none of the --repo repositories" in result.failed["mig-1"]


def test_conflicting_branch_needs_force(tmp_path):
    base, path = make_repo(tmp_path / "repo", list(GRID))
    repo = git.Repo(path)
    repo.git.branch("agentbon/run-synth/mig-1", base)  # exists, other content
    data = load_run(make_run(tmp_path, GRID, SCORES, repo=(base, path)))
    assert "use --force" in export_branches(data, [path]).failed["mig-1"]
    assert "agentbon/run-synth/mig-1" in export_branches(data, [path], force=True).created


def test_patch_files_apply_and_index(tmp_path):
    base, path = make_repo(tmp_path / "repo", list(GRID))
    data = load_run(make_run(tmp_path, GRID, SCORES, repo=(base, path)))
    result = export_patches(data, tmp_path / "patches")
    assert result.created == ["mig-1.patch", "mig-2.patch"]
    text = (tmp_path / "patches" / "mig-1.patch").read_text()
    assert text.startswith("# agentbon: mig-1") and "diff --git" in text
    subprocess.run(["git", "apply", "--check", str(tmp_path / "patches" / "mig-1.patch")], cwd=path, check=True)
    index = [json.loads(line) for line in (tmp_path / "patches" / "winners.jsonl").read_text().splitlines()]
    assert index[0] == {"task_id": "mig-1", "rollout_id": "mig-1/1", "selector": "tests", "patch": "mig-1.patch",
                        "base_commit": base, "grade": "pass", "evidence": "pass", "flags": [], "undone": []}  # fmt: skip


def test_branch_names_are_valid_refs(tmp_path):
    for task in ("a..b", "x.lock", "weird name/with:colon", "ok__1.2"):
        name = branch_name("run 1", task)
        subprocess.run(["git", "check-ref-format", "--branch", name], check=True, capture_output=True)


def test_cli_requires_one_target(tmp_path):
    base, path = make_repo(tmp_path / "repo", list(GRID))
    store = make_run(tmp_path, GRID, SCORES, repo=(base, path))
    bad = CliRunner().invoke(app, ["export", "branches", str(store.path)], env={"COLUMNS": "300"})
    assert bad.exit_code == 2 and "give --repo PATH" in bad.output
    ok = CliRunner().invoke(app, ["export", "branches", str(store.path), "--repo", str(path)])
    assert ok.exit_code == 0, ok.output
    assert "2 branches written" in ok.output and "mig-3: no winner" in ok.output
