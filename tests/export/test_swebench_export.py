"""SWE-bench predictions: the harness's three keys, the selected candidate, one file per rollout index."""

from __future__ import annotations

import json
import subprocess

import pytest
from synth import make_repo, make_run
from typer.testing import CliRunner

from agentbon.cli import app
from agentbon.errors import ExportError
from agentbon.export import export_swebench
from agentbon.report.data import load_run

GRID = {"django__django-1": "FPF", "astropy__astropy-2": "IFE", "sympy__sympy-3": "III"}
SCORES = {"tests": {"django__django-1": [0, 1, 0], "astropy__astropy-2": [0, 1, 0]}}


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_selected_and_per_rollout_files(tmp_path):
    base, repo = make_repo(tmp_path / "repo", list(GRID))
    data = load_run(make_run(tmp_path, GRID, SCORES, repo=(base, repo)))
    files = export_swebench(data, tmp_path / "out")
    assert sorted(p.name for p in files.values()) == [
        "predictions.rollout-0.jsonl", "predictions.rollout-1.jsonl", "predictions.rollout-2.jsonl",
        "predictions.tests.jsonl",
    ]  # fmt: skip
    selected = read(files["tests"])
    assert [p["instance_id"] for p in selected] == list(GRID)
    assert all(set(p) == {"instance_id", "model_name_or_path", "model_patch"} for p in selected)
    assert all(isinstance(v, str) for p in selected for v in p.values())
    assert selected[0]["model_name_or_path"] == "synth-model+agentbon-tests"
    assert "+VALUE = 2" in selected[0]["model_patch"]  # the winner, rollout 1
    assert selected[2]["model_patch"] == ""  # no winner: an empty patch, counted by the harness as such
    # Rollout 0 of astropy is an infra error: not a sample, left out of the per-index file.
    assert [p["instance_id"] for p in read(files["rollout-0"])] == ["django__django-1"]
    assert read(files["rollout-2"])[1]["model_patch"] == ""  # an empty patch stays a (failed) sample
    # Every exported patch applies to the base commit as the harness would apply it.
    for p in read(files["tests"])[:1] + read(files["rollout-1"]):
        (tmp_path / "p.diff").write_text(p["model_patch"])
        subprocess.run(["git", "apply", "--check", str(tmp_path / "p.diff")], cwd=repo, check=True)


def test_unknown_selector_is_named(tmp_path):
    data = load_run(make_run(tmp_path, GRID, SCORES))
    with pytest.raises(ExportError, match=r"--selector nope: .*\(have: tests, oracle\)"):
        export_swebench(data, tmp_path / "out", "nope")


def test_cli(tmp_path):
    store = make_run(tmp_path, GRID, SCORES)
    result = CliRunner().invoke(app, ["export", "swebench", str(store.path), "--selector", "oracle"])
    assert result.exit_code == 0, result.output
    assert (store.path / "exports" / "swebench" / "predictions.oracle.jsonl").exists()
    bad = CliRunner().invoke(app, ["export", "swebench", str(store.path), "--selector", "nope"])
    assert bad.exit_code == 2 and "no selections under that name" in bad.output
