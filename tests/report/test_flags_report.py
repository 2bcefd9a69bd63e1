"""Flags in summary.json, the tables (terminal, Markdown, HTML) and the metrics; older summaries still read."""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from synth import flag, make_run, set_config
from typer.testing import CliRunner

from agentbon.cli import app
from agentbon.metrics.fallback import among_whole
from agentbon.report import build_report, read_summary, render_html, render_markdown, write_reports
from agentbon.report.data import load_run
from agentbon.report.terminal import print_summary

GRID = {"t1": "PFFF", "t2": "FPPF", "t3": "FFFF"}
SCORES = {"tests": {"t1": [1, 0, 0, 0], "t2": [0, 1, 0, 0], "t3": [0, 0, 0, 0]}}


@pytest.fixture
def store(tmp_path):
    store = make_run(tmp_path, GRID, SCORES)
    flag(store, "t1/0", ("tampered",), tampered=("tests/test_t1.py",))  # the tests selector's winner of t1
    flag(store, "t1/2", ("forged", "suspicious_code"), roles=("grade",))
    flag(store, "t2/2", ("large_file",), roles=("evidence",))
    return store


def test_summary_counts_flags_per_kind_per_task_and_on_winners(store):
    f = build_report(store).flags
    assert f.rollouts == 3
    assert f.by_kind == {"tampered": 1, "forged": 1, "suspicious_code": 1, "large_file": 1}
    assert f.tasks_by_kind == {"tampered": 1, "forged": 1, "suspicious_code": 1, "large_file": 1}
    assert f.per_task == {
        "t1": {"tampered": ["t1/0"], "forged": ["t1/2"], "suspicious_code": ["t1/2"]},
        "t2": {"large_file": ["t2/2"]},
    }
    assert f.winners["tests"] == {"t1": ["tampered"]}  # t2's winner (rollout 1) is clean
    assert f.winners["oracle"] == {"t1": ["tampered"]}  # the oracle ranks by grade alone
    assert (f.allowed, f.fallback) == ([], "none")


def test_a_run_without_flags_has_an_empty_section_and_no_flags_table(tmp_path):
    summary = build_report(make_run(tmp_path, GRID, SCORES))
    assert summary.flags.rollouts == 0 and summary.flags.by_kind == {} and summary.flags.winners["tests"] == {}
    assert "Flags" not in render_markdown(summary) and 'id="flags"' not in render_html(summary)


def test_tables_markdown_and_html_show_the_flags(store):
    summary = build_report(store)
    md = render_markdown(summary)
    assert "## Flags (what verification saw candidates do)" in md
    assert "| tampered | 1 | 1 | 1 |" in md and "| forged | 1 | 1 | 0 |" in md
    assert "| flagged rollouts (see Flags) | 3 / 12 |" in md
    assert "Flagged tasks (2; rollout indices per kind): t1 (tampered 0; forged 2; suspicious_code 2)" in md
    assert "⚠ tests (selector) chose flagged winners on 1 tasks: t1 (tampered)." in md
    html = render_html(summary)
    assert html.index('id="headline"') < html.index('id="flags"') < html.index('id="scaling"')


def test_terminal_prints_one_line_per_kind(store):
    console = Console(record=True, width=200)
    print_summary(build_report(store), console, ("flags",))
    lines = [line for line in console.export_text().splitlines() if line.strip().split(" ")[0] in
             ("tampered", "forged", "suspicious_code", "large_file", "disagreement")]  # fmt: skip
    assert [line.split()[0] for line in lines] == ["tampered", "forged", "suspicious_code", "large_file"]
    result = CliRunner().invoke(app, ["report", str(store.path), "--no-write", "--bootstrap", "20"])
    assert result.exit_code == 0 and "Flags (what verification saw" in result.output


def test_flagged_candidates_count_as_no_choice_in_selected_at_k(tmp_path):
    # t: a flagged pass (forged evidence) and a clean fail. The tests selector scores the flagged one invalid.
    store = make_run(tmp_path, {"t": "PF"}, {"tests": {"t": [-1.0, 0.0]}})
    flag(store, "t/0", ("forged",), roles=("evidence",))
    data = load_run(store)
    assert data.candidate.tolist() == [[False, True]] and data.oracle_candidate.tolist() == [[True, True]]
    m = build_report(store).metrics
    assert m.coverage.mean == [0.5, 1.0]
    assert m.selectors["tests"].selected.mean == [0.0, 0.0]  # a subset of the flagged one alone chooses nothing
    assert m.oracle["oracle"].selected.mean == [0.5, 1.0]  # the oracle is unmoved: it stays coverage
    set_config(store, select={"allow_flags": ["forged"]})
    assert load_run(store).candidate.tolist() == [[True, True]]


def test_fallback_makes_an_all_flagged_task_choosable(tmp_path):
    store = make_run(tmp_path, {"t": "PF", "u": "PF"}, {"tests": {"t": [1.0, 0.0], "u": [-1.0, 0.0]}})
    for rid in ("t/0", "t/1", "u/0"):
        flag(store, rid, ("binary",), roles=("evidence",))
    set_config(store, select={"flagged_fallback": "flagged"})
    data = load_run(store)
    assert data.candidate.tolist() == [[False, False], [False, True]]  # the fallback's are apart
    assert data.fallback is not None and data.fallback.tolist() == [[True, True], [True, False]]
    assert among_whole(data.candidate, data.fallback, data.valid).tolist() == [[True, True], [False, True]]
    report = build_report(store)
    assert report.flags.fallback == "flagged"
    # Decided inside each subset: t chooses among its flagged pair (by the tests' scores: 0.5, 1.0); u's subset of
    # its flagged pass alone chooses it, a subset holding its clean fail chooses that (0.5, 0.0).
    assert report.metrics.selectors["tests"].selected.mean == pytest.approx([0.5, 0.5])


def test_reads_a_version_2_summary_without_flags(store):
    path = write_reports(store)["summary"]
    raw = json.loads(path.read_text())
    assert raw["version"] == 7 and raw["flags"]["rollouts"] == 3
    del raw["flags"], raw["calibration"]
    raw["version"] = 2
    path.write_text(json.dumps(raw))
    old = read_summary(path)
    assert old.version == 2 and old.flags.rollouts == 0 and old.flags.per_task == {}
    assert "Flags" not in render_markdown(old)
