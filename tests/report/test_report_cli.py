"""`agentbon report`: re-render from the store, --json, --compare, clear errors."""

from __future__ import annotations

import json

from synth import make_run
from typer.testing import CliRunner

from agentbon.cli import app

runner = CliRunner()


def test_report_writes_files_and_prints_tables(tmp_path):
    store = make_run(tmp_path, {"t1": "PFFF", "t2": "FFPI"}, {"tests": {"t1": [1, 0, 0, 0], "t2": [0, 0, 1, 0]}})
    result = runner.invoke(app, ["report", str(store.path), "--bootstrap", "50"])
    assert result.exit_code == 0, result.output
    assert "Headline" in result.output and "What each doubling of N buys" in result.output
    summary = json.loads((store.path / "summary.json").read_text())
    assert summary["metrics"]["bootstrap"] == 50 and summary["resolved_ids"] == ["t1", "t2"]
    assert (store.path / "report.html").exists() and (store.path / "report.md").exists()


def test_report_json_and_no_write(tmp_path):
    store = make_run(tmp_path, {"t": "PF"}, {"s": {"t": [1, 0]}})
    result = runner.invoke(app, ["report", str(store.path), "--json", "--no-write"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["run_id"] == "run-synth"
    assert not (store.path / "summary.json").exists()


def test_compare_two_runs(tmp_path):
    a = make_run(tmp_path, {"t": "PFFF", "u": "FFFF"}, {"tests": {"t": [1, 0, 0, 0], "u": [0] * 4}}, run_id="run-a")
    b = make_run(
        tmp_path, {"t": "PPFF", "u": "PFFF"}, {"tests": {"t": [1, 1, 0, 0], "u": [1, 0, 0, 0]}}, run_id="run-b"
    )
    result = runner.invoke(app, ["report", "--compare", str(a.path), str(b.path), "-o", str(tmp_path / "cmp")])
    assert result.exit_code == 0, result.output
    assert "run-a" in result.output and "run-b" in result.output
    md = (tmp_path / "cmp" / "compare.md").read_text()
    assert "| selected@4 (tests) | 50.0 | 100.0 | +50.0 |" in md
    assert "| pass@1 | 12.5 | 37.5 | +25.0 |" in md


def test_not_a_run_directory_is_a_clear_error(tmp_path):
    wide = {"COLUMNS": "400"}  # the error box would otherwise wrap the message at 80 columns
    result = runner.invoke(app, ["report", str(tmp_path)], env=wide)
    assert result.exit_code == 2
    assert f"{tmp_path}: not a run directory" in result.output
    result = runner.invoke(app, ["report", str(tmp_path / "nope")], env=wide)
    assert result.exit_code == 2 and "nope: no such run directory" in result.output
