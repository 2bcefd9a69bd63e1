"""Staged verification replayed from a run: the critic picks which candidates the evidence tests run on; selected
accuracy against the container-seconds those tests cost, per policy, in the summary, the tables and the HTML."""

from __future__ import annotations

from pytest import approx
from synth import flip_evidence, make_run, set_parses
from test_calibration_report import CRITIC, GRID

from agentbon.report import build_summary, render_html, render_markdown


def test_each_policy_tests_fewer_candidates_and_pays_in_accuracy_where_the_critic_errs(tmp_path):
    store = make_run(tmp_path, GRID, {"critic": CRITIC})
    f = build_summary(store)["frontier"]
    by = {p["policy"]: p for p in f["policies"]}
    assert list(by) == ["tests on all, then critic", "critic, tests on top 1", "critic, tests on top 2",
                        "critic alone"]  # fmt: skip
    full = by["tests on all, then critic"]
    assert full["tested"] == 24 and full["container_s"] == 24 * 1.5  # synth: 1.5 s per evidence run
    assert full["accuracy"] == approx(5 / 6)  # evidence == grade: every task with a pass is solved (c has none)
    top1 = by["critic, tests on top 1"]
    assert top1["tested"] == 6 and top1["throughput"] == 4.0
    # The critic's top candidate passes in a, b, d, f and fails in e (its pass is third): 4 of 6.
    assert top1["accuracy"] == approx(4 / 6) and top1["accuracy_drop_points"] == round(100 / 6, 3)
    assert by["critic, tests on top 2"]["tested"] == 12
    alone = by["critic alone"]
    assert alone["tested"] == 0 and alone["throughput"] is None and alone["accuracy"] == top1["accuracy"]
    costs = [p["container_s"] for p in f["policies"][1:]]  # top 1, top 2, ..., then none: cheaper than all
    assert costs[:-1] == sorted(costs[:-1]) and max(costs) < full["container_s"] and costs[-1] == 0


def test_wrong_evidence_is_what_testing_more_candidates_risks(tmp_path):
    store = make_run(tmp_path, GRID, {"critic": CRITIC})
    flip_evidence(store, ["a/1"])  # a failing candidate the evidence passes; the critic ranks it low
    by = {p["policy"]: p for p in build_summary(store)["frontier"]["policies"]}
    assert by["critic, tests on top 1"]["accuracy"] == approx(4 / 6)
    assert by["tests on all, then critic"]["accuracy"] == approx(5 / 6)  # a/0 still wins a: passes and outranks a/1


def test_the_report_shows_the_frontier_and_needs_recorded_critic_scores(tmp_path):
    s = build_summary(make_run(tmp_path, GRID, {"critic": CRITIC}))
    md, html = render_markdown(s), render_html(s)
    assert "## Staged verification: accuracy against verification cost" in md and "11.6x" in md
    assert "Accuracy against verification cost" in html
    assert build_summary(make_run(tmp_path / "other", GRID, {"tests": CRITIC}))["frontier"] is None


def test_the_parse_stage_drops_what_does_not_compile_before_the_critic_ranks(tmp_path):
    store = make_run(tmp_path, GRID, {"critic": CRITIC})
    # e's critic favourite (e/3, failing) does not compile; neither does any of c's, which keeps them all.
    set_parses(store, {"e/3": False, "e/2": True, **{f"c/{j}": False for j in range(4)}})
    s = build_summary(store)
    f = s["frontier"]
    by = {p["policy"]: p for p in f["policies"]}
    assert f["parse_stage"] and by["critic, tests on top 1"]["accuracy"] == approx(4 / 6)  # unfiltered: as before
    staged = by["parses, then critic, tests on top 1"]
    assert staged["accuracy"] == approx(5 / 6) and staged["tested"] == 6  # e/2 is e's top once e/3 is gone
    assert by["parses, then critic alone"]["accuracy"] == approx(5 / 6)
    assert by["parses, then tests on all, then critic"]["tested"] == 23  # only e/3 left out: c keeps all four
    assert "tests on all, then critic" == f["policies"][0]["policy"]  # the baseline of every ratio
    assert f["unparsed"] == 5 and f["candidates"] == 24
    assert '"parses, then": a task\'s candidates whose changed Python files do not all compile (5 of 24 here)' in (
        render_markdown(s)
    )

