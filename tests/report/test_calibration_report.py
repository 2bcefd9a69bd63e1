"""Critic calibration in the report: each critic against the grade with intervals over tasks, the evidence baseline,
an out-of-fold classifier, and which critic the run used; the figures equal the plain metrics on the same arrays."""

from __future__ import annotations

import numpy as np
from synth import flip_evidence, make_run

from agentbon.critic import calibration as cal
from agentbon.report import build_report, build_summary, render_html, render_markdown
from agentbon.report.schema import RunReport

GRID = {"a": "PFFF", "b": "PPFF", "c": "FFFF", "d": "PFPF", "e": "FFPF", "f": "PPPF"}
CRITIC = {  # informative but not perfect: one passing candidate scored low, one failing high
    "a": [0.9, 0.2, 0.3, 0.1], "b": [0.7, 0.2, 0.6, 0.1], "c": [0.1, 0.2, 0.3, 0.4],
    "d": [0.8, 0.3, 0.9, 0.2], "e": [0.1, 0.2, 0.7, 0.8], "f": [0.9, 0.8, 0.6, 0.3],
}  # fmt: skip


def test_each_critic_against_the_grade_with_intervals_over_tasks(tmp_path):
    store = make_run(tmp_path, GRID, {"tests": {t: [0.0] * 4 for t in GRID}, "critic": CRITIC})
    flip_evidence(store, ["a/0", "c/1", "f/3"])
    s = build_summary(store)
    section = s["calibration"]
    assert section["used"] == "heuristic-prior" and "not learned" in section["why"]
    by_name = {c["name"]: c for c in section["critics"]}
    assert set(by_name) == {"heuristic-prior", "evidence passed", "classifier, out of fold"}
    labels = np.array([1.0 if c == "P" else 0.0 for t in GRID for c in GRID[t]])
    scores = np.array([v for t in GRID for v in CRITIC[t]])
    run = by_name["heuristic-prior"]  # the recorded scores of the run's critic, under its name
    assert run["role"] == "run" and run["n"] == 24 and run["positives"] == 9 and run["tasks"] == 6
    assert run["auroc"]["mean"] == cal.auroc(labels, scores)
    assert abs(run["ece"]["mean"] - cal.ece(labels, scores)) < 1e-12
    assert abs(run["brier"]["mean"] - cal.brier(labels, scores)) < 1e-12
    for c in section["critics"]:
        for m in ("ece", "brier"):
            assert c[m]["lo"] <= c[m]["mean"] + 1e-9 and c[m]["mean"] - 1e-9 <= c[m]["hi"]
        assert sum(b["count"] for b in c["bins"]) == c["n"]
    baseline = by_name["evidence passed"]
    assert baseline["role"] == "baseline" and baseline["auroc"]["mean"] < 1.0  # three flipped
    assert any("out of fold" in n for n in section["notes"])


def test_the_prior_is_recomputed_where_no_critic_scores_were_recorded(tmp_path):
    store = make_run(tmp_path, GRID, {"tests": {t: [0.0] * 4 for t in GRID}})
    critics = build_summary(store)["calibration"]["critics"]
    assert critics[0]["name"] == "heuristic-prior" and critics[0]["n"] == 24
    assert {round(b["mean_score"], 2) for b in critics[0]["bins"]} <= {0.2, 0.3, 0.7, 0.8}  # the prior's levels


def test_one_grade_only_leaves_auroc_undefined_and_the_classifier_unfitted(tmp_path):
    store = make_run(tmp_path, {"a": "FFFF", "b": "FFFF"}, {"critic": {"a": [0.1] * 4, "b": [0.9] * 4}})
    section = build_summary(store)["calibration"]
    assert all(c["auroc"]["mean"] is None for c in section["critics"])
    assert any("same grade" in n for n in section["notes"])


def test_the_report_shows_the_table_and_the_reliability_diagram(tmp_path):
    store = make_run(tmp_path, GRID, {"critic": CRITIC})
    s = build_report(store)
    md, html = render_markdown(s), render_html(s)
    assert "## Critics against the grade" in md and "| evidence passed | baseline |" in md
    assert "The run's selectors used heuristic-prior" in md
    assert "Critic reliability" in html and 'id="calibration"' in html


def test_a_summary_without_the_section_still_reads(tmp_path):
    s = build_summary(make_run(tmp_path, GRID, {"critic": CRITIC}))
    old = {k: v for k, v in s.items() if k != "calibration"} | {"version": 3}
    report = RunReport.model_validate(old)
    assert report.calibration.critics == [] and "Critics against the grade" not in render_markdown(report)
