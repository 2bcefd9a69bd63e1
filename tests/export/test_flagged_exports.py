"""Flagged winners in every export: marked with their flags and the files grading undid, or left out (omit)."""

from __future__ import annotations

import json

import git
import pytest
from synth import flag, make_repo, make_run, set_config
from typer.testing import CliRunner

from agentbon.cli import app
from agentbon.errors import ExportError
from agentbon.export import export_branches, export_pairs, export_patches, export_swebench
from agentbon.report.data import load_run

GRID = {"a": "FPF", "b": "PFF", "c": "FFP"}
SCORES = {"tests": {"a": [0, 1, 0], "b": [1, 0, 0], "c": [0, 0, 1]}}
UNDONE = ("tests/test_a.py", "conftest.py")


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def run(tmp_path):
    """a's winner touched protected files (undone by grading); b's winner was flagged forged by the grade only."""
    base, path = make_repo(tmp_path / "repo", list(GRID))
    store = make_run(tmp_path, GRID, SCORES, repo=(base, path))
    flag(store, "a/1", ("tampered",), tampered=UNDONE)
    flag(store, "b/0", ("forged",), roles=("grade",))
    flag(store, "c/0", ("binary",), roles=("evidence",))  # a loser: only the per-rollout files see it
    return store, path


def test_predictions_mark_flags_and_undone_files_next_to_the_patch(run, tmp_path):
    store, _ = run
    files = export_swebench(load_run(store), tmp_path / "out")
    a, b, c = read(files["tests"])
    assert a["model_patch"].startswith("diff --git")  # mark (the default): the patch ships as it is
    assert a["agentbon_undone"] == sorted(UNDONE)
    assert [f["kind"] for f in a["agentbon_flags"]] == ["tampered"] and a["agentbon_flags"][0]["paths"] == list(UNDONE)
    assert [f["kind"] for f in b["agentbon_flags"]] == ["forged"] and b["agentbon_undone"] == []
    assert set(c) == {"instance_id", "model_name_or_path", "model_patch"}  # a clean line is the harness's own
    per_rollout = {p["instance_id"]: p for p in read(files["rollout-0"])}
    assert [f["kind"] for f in per_rollout["c"]["agentbon_flags"]] == ["binary"]


def test_predictions_omit_empties_flagged_patches_but_keeps_why(run, tmp_path):
    store, _ = run
    files = export_swebench(load_run(store), tmp_path / "out", flagged="omit")
    a, b, c = read(files["tests"])
    assert a["model_patch"] == "" and b["model_patch"] == "" and c["model_patch"].startswith("diff --git")
    assert a["agentbon_undone"] == sorted(UNDONE)
    assert {p["instance_id"]: p["model_patch"] for p in read(files["rollout-0"])}["c"] == ""


def test_allowed_kinds_are_not_omitted_and_the_config_sets_the_default(run, tmp_path):
    store, _ = run
    set_config(store, select={"allow_flags": ["tampered"]}, export={"flagged": "omit"})
    a, b, _ = read(export_swebench(load_run(store), tmp_path / "out")["tests"])
    assert a["model_patch"].startswith("diff --git") and a["agentbon_undone"] == sorted(UNDONE)  # allowed, marked
    assert b["model_patch"] == ""
    set_config(store, export={"flagged": "drop"})
    with pytest.raises(ExportError, match="export.flagged in the run's config.yaml: 'drop' is not one of mark, omit"):
        export_swebench(load_run(store), tmp_path / "out")


def test_branch_commit_message_lists_flags_and_what_grading_undid(run):
    store, path = run
    result = export_branches(load_run(store), [path])
    assert result.created == ["agentbon/run-synth/a", "agentbon/run-synth/b", "agentbon/run-synth/c"]
    message = git.Repo(path).commit("agentbon/run-synth/a").message
    assert "flag tampered: tampered in a/1 (tests/test_a.py, conftest.py)" in message
    assert "grading undid this patch's changes to: conftest.py, tests/test_a.py" in message
    assert "flag" not in git.Repo(path).commit("agentbon/run-synth/c").message
    assert result.flagged == {"a": "tampered; grading undid: conftest.py, tests/test_a.py", "b": "forged"}


def test_branches_and_patch_files_omit_flagged_winners(run, tmp_path):
    store, path = run
    result = export_branches(load_run(store), [path], flagged="omit")
    assert result.created == ["agentbon/run-synth/c"]
    assert result.skipped == {
        "a": "flagged: tampered (export.flagged: omit)",
        "b": "flagged: forged (export.flagged: omit)",
    }
    marked = export_patches(load_run(store), tmp_path / "patches")
    assert marked.created == ["a.patch", "b.patch", "c.patch"]
    assert (
        "# grading undid this patch's changes to: conftest.py, tests/test_a.py"
        in (tmp_path / "patches" / "a.patch").read_text()
    )
    index = {row["task_id"]: row for row in read(tmp_path / "patches" / "winners.jsonl")}
    assert (index["a"]["flags"], index["a"]["undone"]) == (["tampered"], sorted(UNDONE))
    assert (index["c"]["flags"], index["c"]["undone"]) == ([], [])


def test_pairs_never_choose_a_flagged_candidate_and_mark_or_omit_rejected_ones(tmp_path):
    store = make_run(tmp_path, {"t": "PPFF"}, {"s": {"t": [0.0] * 4}})
    flag(store, "t/0", ("tampered",), tampered=("tests/test_t.py",))
    flag(store, "t/2", ("suspicious_code",))
    stats = export_pairs(store, load_run(store), tmp_path / "pairs.jsonl")
    rows = read(tmp_path / "pairs.jsonl")
    assert stats.skipped == {"chosen flagged (tampered)": 1} and stats.pairs == 2
    assert {r["metadata"]["chosen"]["rollout_id"] for r in rows} == {"t/1"}
    flagged = next(r for r in rows if r["metadata"]["rejected"]["rollout_id"] == "t/2")
    assert [f["kind"] for f in flagged["metadata"]["rejected"]["flags"]] == ["suspicious_code"]
    omitted = export_pairs(store, load_run(store), tmp_path / "pairs2.jsonl", flagged="omit")
    assert omitted.pairs == 1 and omitted.skipped["rejected flagged (suspicious_code; export.flagged: omit)"] == 1


def test_cli_flagged_option(run):
    store, path = run
    ok = CliRunner().invoke(app, ["export", "branches", str(store.path), "--repo", str(path), "--flagged", "omit"])
    assert ok.exit_code == 0, ok.output
    assert "a: flagged: tampered (export.flagged: omit)" in ok.output
    bad = CliRunner().invoke(app, ["export", "swebench", str(store.path), "--flagged", "nope"])
    assert bad.exit_code == 2 and "--flagged: 'nope' is not one of mark, omit" in bad.output
