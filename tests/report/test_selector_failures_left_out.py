"""A selection that failed on infrastructure (a judge's server down) leaves its task out of every figure that reads
that selector, never scored 0 and never read from an earlier selection it replaced: the curves, and equally the
frontier, the calibration and the nightly compare (docs/failure-taxonomy.md, "Selection")."""

from __future__ import annotations

import pytest
from synth import make_run, set_config

from agentbon.report import build_summary
from agentbon.report.nightly import states

GRID = {"a": "PF", "b": "FP", "c": "FP"}
CRITIC = {"a": [0.9, 0.1], "b": [0.1, 0.9], "c": [0.2, 0.8]}
"""The critic ranks the passing candidate first everywhere: every task is solved by it."""


def _failed_on_b(tmp_path):
    store = make_run(tmp_path, GRID, {"critic": CRITIC, "tests": CRITIC}, selectors_order=["critic", "tests"])
    set_config(store, select={"critic": "judge"})
    # A later invocation's judge call failed on b: its first selection no longer stands.
    store.append("selector_error", task_id="b", selector="critic", error="ServerFailure: down", infra=True)
    return store


def test_the_curves_leave_the_task_out(tmp_path):
    block = build_summary(_failed_on_b(tmp_path))["metrics"]["selectors"]["critic"]
    assert block["tasks_left_out"] == {"b": "ServerFailure: down"}
    assert block["selected"]["mean"] == pytest.approx([0.5, 1.0])  # over a and c, both solved at k = 2; b not scored 0


def test_the_frontier_leaves_the_task_out_of_every_policy(tmp_path):
    f = build_summary(_failed_on_b(tmp_path))["frontier"]
    by = {p["policy"]: p for p in f["policies"]}
    # Over a and c (the critic's first candidate passes in both), not b read in index order and counted unsolved.
    assert by["critic alone"]["accuracy"] == pytest.approx(1.0)
    assert by["tests on all, then critic"]["accuracy"] == pytest.approx(1.0)
    assert f["tasks"] == 2 and f["tasks_left_out"] == ["b"] and f["candidates"] == 4


def test_the_calibration_measures_the_critic_on_the_tasks_it_scored(tmp_path):
    c = build_summary(_failed_on_b(tmp_path))["calibration"]
    by = {block["name"]: block for block in c["critics"]}
    assert c["used"] == "llm-judge"
    assert by["llm-judge"]["n"] == 4 and by["llm-judge"]["auroc"]["mean"] == pytest.approx(1.0)  # a and c's candidates
    assert by["evidence passed"]["n"] == 4  # the baseline on the same candidates
    assert any("1 task(s) left out" in note and "(b)" in note for note in c["notes"])


def test_the_nightly_compare_reads_no_result_from_a_replaced_selection(tmp_path):
    got = states(_failed_on_b(tmp_path), "critic")
    assert got["a"].state == got["c"].state == "solved"
    assert got["b"].state == "not run"  # its earlier winner passed, but that selection no longer stands
