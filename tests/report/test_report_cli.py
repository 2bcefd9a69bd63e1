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


def test_compare_reads_a_runs_summary_json_through_its_version_check(tmp_path):
    a = make_run(tmp_path, {"t": "PFFF"}, {"tests": {"t": [1, 0, 0, 0]}}, run_id="run-a")
    b = make_run(tmp_path, {"t": "PPFF"}, {"tests": {"t": [1, 1, 0, 0]}}, run_id="run-b")
    assert runner.invoke(app, ["report", str(a.path), "--bootstrap", "50"]).exit_code == 0  # a's summary.json
    written = a.path / "summary.json"
    summary = json.loads(written.read_text())
    written.write_text(json.dumps({**summary, "model": "model-as-written"}))
    result = runner.invoke(app, ["report", "--compare", str(a.path), str(b.path)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "model-as-written" in result.output  # read back, not rebuilt (b has none: built from its store)
    written.write_text(json.dumps({**summary, "version": 999}))
    result = runner.invoke(app, ["report", "--compare", str(a.path), str(b.path)], env={"COLUMNS": "400"})
    assert result.exit_code == 2
    assert "version 999" in result.output and "re-render it with `agentbon report RUN_DIR`" in result.output


def test_not_a_run_directory_is_a_clear_error(tmp_path):
    wide = {"COLUMNS": "400"}  # the error box would otherwise wrap the message at 80 columns
    result = runner.invoke(app, ["report", str(tmp_path)], env=wide)
    assert result.exit_code == 2
    assert f"{tmp_path}: not a run directory" in result.output
    result = runner.invoke(app, ["report", str(tmp_path / "nope")], env=wide)
    assert result.exit_code == 2 and "nope: no such run directory" in result.output


def test_compare_says_per_task_what_changed_overnight_and_which_tests_are_flaky(tmp_path):
    """Last night (A) and tonight (B): u is newly solved, but by a patch A graded fail (identical patches, both
    grades: flaky tests); w is new and got no grade (infra, listed as such); x was dropped; t stayed solved. The per-task table
    comes most urgent first, in the terminal, compare.md and compare.html."""
    a = make_run(tmp_path, {"t": "PFFF", "u": "FFFF", "x": "PF"},
                 {"tests": {"t": [1, 0, 0, 0], "u": [0] * 4, "x": [1, 0]}}, run_id="nightly-1")  # fmt: skip
    b = make_run(tmp_path, {"t": "PPFF", "u": "PFFF", "w": "II"},
                 {"tests": {"t": [1, 1, 0, 0], "u": [1, 0, 0, 0], "w": [0, 0]}}, run_id="nightly-2")  # fmt: skip
    out = tmp_path / "cmp"
    result = runner.invoke(app, ["report", "--compare", str(a.path), str(b.path), "-o", str(out)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "Per task: nightly-1 → nightly-2" in result.output and "newly solved (flaky tests)" in result.output
    md = (out / "compare.md").read_text()
    changes = md.split("Per task: nightly-1 → nightly-2", 1)[1]
    rows = [line for line in changes.splitlines() if line.startswith("| ") and not line.startswith(("| task", "|--", "| -"))]
    assert [r.split(" | ")[0].removeprefix("| ") for r in rows] == ["u", "w", "x", "t"]
    assert "| u | no-repo | unsolved (0/4 pass) | solved (1/4 pass) | newly solved (flaky tests) | 1 patch(es) graded both ways |" in md
    assert "| w | no-repo | — | infra (0/0 pass) | infra |  |" in md
    assert "| x | no-repo | solved (1/2 pass) | — | dropped |  |" in md
    assert "| t | no-repo | solved (1/4 pass) | solved (2/4 pass) | still solved | 1 patch(es) graded both ways |" in md
    assert "1 newly solved, 1 infra, 1 dropped, 1 still solved" in md
    assert "⚠ 2 task(s) have identical patches graded pass once and fail another time" in md
    html = (out / "compare.html").read_text()
    assert '<h2 id="changes">' in html and "newly solved (flaky tests)" in html and '<h2 id="compare">' in html


def test_a_repository_is_named_the_way_a_reader_names_it():
    from agentbon.report.nightly import repository
    from agentbon.types import RepoSource, Task, TestSet

    def task(url: str, **metadata: str) -> Task:
        return Task(task_id="t", problem_statement="p", repo=RepoSource(url=url, base_commit="0" * 40),
                    grade=TestSet(command="true"), metadata=metadata)  # fmt: skip

    assert repository(task("https://github.com/psf/requests.git")) == "psf/requests"
    assert repository(task("git@github.com:psf/requests.git")) == "psf/requests"
    assert repository(task("/srv/suites/migrate/billing/repo.bundle")) == "billing"
    assert repository(task("/srv/clones/billing")) == "billing"
    assert repository(task("https://x/y.git", repo="acme/billing")) == "acme/billing"


def test_tables_printed_to_a_log_keep_one_row_per_line(tmp_path, monkeypatch):
    """A nightly batch's output goes to a file: without a terminal (and without COLUMNS) the tables are printed
    wide, so that no header or cell is broken over lines."""
    monkeypatch.delenv("COLUMNS", raising=False)
    store = make_run(tmp_path, {"t1": "PFFF", "t2": "FFPI"}, {"tests": {"t1": [1, 0, 0, 0], "t2": [0, 0, 1, 0]}})
    result = runner.invoke(app, ["report", str(store.path), "--bootstrap", "50", "--no-write"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = next(line for line in lines if "selector" in line)
    assert "selected@" in header or "k" in header, header  # the whole header on one line
    assert not any(line.strip("│ ").startswith("r ") or line.strip("│ ") == "r" for line in lines), result.output
    rows = [line for line in lines if line.lstrip("│ ").startswith("tests")]
    assert rows and all(line.count("[") == line.count("]") for line in rows), rows  # intervals not split
    assert max(map(len, lines)) > 80
