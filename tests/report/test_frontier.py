"""Staged verification replayed from a run: the critic picks which candidates the evidence tests run on; selected
accuracy against the container-seconds those tests cost, per policy, in the summary, the tables and the HTML."""

from __future__ import annotations

import pytest
from synth import flip_evidence, make_run, set_parses, set_test_times
from test_calibration_report import CRITIC, GRID

from agentbon.report import RunReport, build_report, build_summary, render_html, render_markdown


def test_each_policy_tests_fewer_candidates_and_pays_in_accuracy_where_the_critic_errs(tmp_path):
    store = make_run(tmp_path, GRID, {"critic": CRITIC})
    f = build_summary(store)["frontier"]
    by = {p["policy"]: p for p in f["policies"]}
    assert list(by) == ["tests on all, then critic", "critic, tests on top 1", "critic, tests on top 2",
                        "critic alone"]  # fmt: skip
    full = by["tests on all, then critic"]
    assert full["tested"] == 24 and full["container_s"] == 24 * 1.5  # synth: 1.5 s per evidence run
    assert full["accuracy"] == pytest.approx(5 / 6)  # evidence == grade: every task with a pass is solved (c has none)
    top1 = by["critic, tests on top 1"]
    assert top1["tested"] == 6 and top1["throughput"] == 4.0
    # The critic's top candidate passes in a, b, d, f and fails in e (its pass is third): 4 of 6.
    assert top1["accuracy"] == pytest.approx(4 / 6) and top1["accuracy_drop_points"] == round(100 / 6, 3)
    assert by["critic, tests on top 2"]["tested"] == 12
    alone = by["critic alone"]
    assert alone["tested"] == 0 and alone["throughput"] is None and alone["accuracy"] == top1["accuracy"]
    costs = [p["container_s"] for p in f["policies"][1:]]  # top 1, top 2, ..., then none: cheaper than all
    assert costs[:-1] == sorted(costs[:-1]) and max(costs) < full["container_s"] and costs[-1] == 0


def test_wrong_evidence_is_what_testing_more_candidates_risks(tmp_path):
    store = make_run(tmp_path, GRID, {"critic": CRITIC})
    flip_evidence(store, ["a/1"])  # a failing candidate the evidence passes; the critic ranks it low
    by = {p["policy"]: p for p in build_summary(store)["frontier"]["policies"]}
    assert by["critic, tests on top 1"]["accuracy"] == pytest.approx(4 / 6)
    assert by["tests on all, then critic"]["accuracy"] == pytest.approx(5 / 6)  # a/0 still wins a: passes and outranks a/1


def test_the_report_shows_the_frontier_and_needs_recorded_critic_scores(tmp_path):
    s = build_report(make_run(tmp_path, GRID, {"critic": CRITIC}))
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
    assert f["parse_stage"] and by["critic, tests on top 1"]["accuracy"] == pytest.approx(4 / 6)  # unfiltered: as before
    staged = by["parses, then critic, tests on top 1"]
    assert staged["accuracy"] == pytest.approx(5 / 6) and staged["tested"] == 6  # e/2 is e's top once e/3 is gone
    assert by["parses, then critic alone"]["accuracy"] == pytest.approx(5 / 6)
    assert by["parses, then tests on all, then critic"]["tested"] == 23  # only e/3 left out: c keeps all four
    assert "tests on all, then critic" == f["policies"][0]["policy"]  # the baseline of every ratio
    assert f["unparsed"] == 5 and f["candidates"] == 24
    assert '"parses, then": a task\'s candidates whose changed Python files do not all compile (5 of 24 here)' in (
        render_markdown(RunReport.model_validate(s))
    )



def test_the_fail_to_pass_tests_first_drop_candidates_at_a_fraction_of_the_cost(tmp_path):
    store = make_run(tmp_path, GRID, {"critic": CRITIC})
    # 1.5 s per evidence run: 0.3 s fixed, 0.2 s the FAIL_TO_PASS test, 1.0 s the PASS_TO_PASS one. e/3 (e's critic
    # favourite, failing) passes its FAIL_TO_PASS test and fails only the other: the subset keeps it.
    set_test_times(store, f2p_s=0.2, p2p_s=1.0, p2p_only_fails=["e/3"])
    f = build_summary(store)["frontier"]
    by = {p["policy"]: p for p in f["policies"]}
    assert f["subset_stage"] and f["subset_costed"] == 24 and f["subset_dropped"] == 24 - 9 - 1  # 9 pass; e/3
    full, staged = by["tests on all, then critic"], by["FAIL_TO_PASS first, then tests on all, then critic"]
    assert staged["accuracy"] == full["accuracy"] == pytest.approx(5 / 6)  # an evidence pass needs its FAIL_TO_PASS test
    # 24 candidates x 0.5 s (fixed part and the FAIL_TO_PASS test), then the rest (1.0 s) on the 14 that go on:
    # a/0, b/0-1, d/0, d/2, e/2-3, f/0-2, and c's four (all of c's failed it, so none of them is dropped).
    assert staged["container_s"] == pytest.approx(24 * 0.5 + 14 * 1.0) and staged["tested"] == 14
    assert staged["throughput"] == pytest.approx(36 / 26, abs=1e-3)
    top1 = by["FAIL_TO_PASS first, then critic, tests on top 1"]
    assert top1["accuracy"] == pytest.approx(4 / 6)  # e/3 survives and is e's top: tested, it fails, and is chosen anyway
    assert by["FAIL_TO_PASS first, then critic, tests on top 2"]["accuracy"] == pytest.approx(5 / 6)
    assert by["FAIL_TO_PASS first, then critic alone"]["container_s"] == pytest.approx(12.0)
    md = render_markdown(build_report(store))
    assert "the 14 of 24 candidates one failed are dropped" in md


def test_a_run_that_verified_fail_to_pass_first_itself_says_so_and_costs_what_it_spent(tmp_path):
    store = make_run(tmp_path, GRID, {"critic": CRITIC})
    set_test_times(store, f2p_s=0.2, p2p_s=1.0, p2p_only_fails=["e/3"], live=True)
    s = build_summary(store)
    f = s["frontier"]
    by = {p["policy"]: p for p in f["policies"]}
    assert f["subset_live"] == 14 and f["subset_dropped"] == 14
    # What the run spent: 14 candidates stopped after 0.5 s, 10 ran both calls (1.5 s).
    assert by["tests on all, then critic"]["container_s"] == pytest.approx(14 * 0.5 + 10 * 1.5)
    staged = by["FAIL_TO_PASS first, then tests on all, then critic"]
    assert staged["container_s"] == pytest.approx(14 * 0.5 + 10 * 1.5) and staged["accuracy"] == pytest.approx(5 / 6)
    assert "This run verified FAIL_TO_PASS first (verify.fail_to_pass_first): 14 candidates stopped there" in (
        render_markdown(RunReport.model_validate(s))
    )


def test_the_selectors_that_read_no_test_are_points_at_no_verification_cost(tmp_path):
    scores = {"critic": CRITIC, "random": {t: [0.5] * 4 for t in GRID}, "majority": {t: [2.0, 1, 1, 1] for t in GRID}}
    s = build_summary(make_run(tmp_path, GRID, scores))
    by = {p["policy"]: p for p in s["frontier"]["policies"]}
    random, majority = by["random alone (no tests)"], by["majority alone (no tests)"]
    assert random["accuracy"] == pytest.approx((1 + 2 + 0 + 2 + 1 + 3) / 4 / 6)  # a uniform choice: each task's pass rate
    assert majority["accuracy"] == pytest.approx(4 / 6)  # index 0 everywhere: a, b, d and f pass
    for row in (random, majority):
        assert row["container_s"] == 0.0 and row["tested"] == 0 and row["throughput"] is None
    assert random["accuracy_drop_points"] == pytest.approx(100 * (5 / 6 - 0.375), abs=1e-3)
    assert "soft-bon alone (no tests)" not in by  # not a selector of this run
    assert "random alone (no tests)" in render_markdown(RunReport.model_validate(s))


def test_no_subset_stage_without_test_times_or_without_tests_beyond_the_subset(tmp_path):
    f = build_summary(make_run(tmp_path, GRID, {"critic": CRITIC}))["frontier"]
    assert not f["subset_stage"] and not any(p["policy"].startswith("FAIL_TO_PASS") for p in f["policies"])


def test_the_subset_stage_cost_and_finding_of_one_verdict():
    from agentbon.report.data import subset_stage
    from agentbon.types import TestSet, Verdict

    tests = TestSet(fail_to_pass=["t.py::f1", "t.py::f2"], pass_to_pass=["t.py::p"])
    v = Verdict(run_id="r", task_id="t", rollout_id="t/0", role="evidence", status="fail", duration_s=3.0,
                tests={"t.py::f1": "passed", "t.py::f2": "passed", "t.py::p": "failed"},
                test_s={"t.py::f1": 0.5, "t.py::f2": 0.25, "t.py::p": 1.5})  # fmt: skip
    assert subset_stage(tests, v) == (0.75 + 0.75, False)  # the fixed 0.75 s, then the two FAIL_TO_PASS tests
    failing = v.model_copy(update={"tests": {**v.tests, "t.py::f2": "missing"}})
    assert subset_stage(tests, failing) == (1.5, True)
    flaky = failing.model_copy(update={"flaky": {"t.py::f2": "excluded"}})
    assert subset_stage(tests, flaky) == (1.25, False)  # decided apart (k of m): not part of the subset
    shared = v.model_copy(update={"duration_s": 0.0})  # a verdict shared with an identical patch cost nothing
    assert subset_stage(tests, shared) == (0.0, False)
    forged = v.model_copy(update={"test_s": {"t.py::f1": 100.0, "t.py::f2": 0.0, "t.py::p": 0.0}})
    assert subset_stage(tests, forged) == (3.0, False)  # never more than the verification's own seconds
    assert subset_stage(TestSet(fail_to_pass=["t.py::f1"]), v) is None  # the subset would be the whole
    assert subset_stage(tests, v.model_copy(update={"test_s": {}})) is None  # no times: no estimate


def test_a_verdict_shared_with_an_identical_patch_is_dropped_by_the_subset_at_no_cost(tmp_path):
    from unittest import mock

    store = make_run(tmp_path, GRID, {"critic": CRITIC})
    set_test_times(store, f2p_s=0.2, p2p_s=1.0, p2p_only_fails=["e/3"])
    with mock.patch("agentbon.store.os.fsync"):  # d/1 failed its FAIL_TO_PASS test, in a verdict it shared
        store.save_verdict(store.verdicts("evidence")["d/1"].model_copy(update={"duration_s": 0.0}))
    f = build_summary(store)["frontier"]
    by = {p["policy"]: p for p in f["policies"]}
    assert f["subset_dropped"] == 14 and by["tests on all, then critic"]["container_s"] == pytest.approx(36 - 1.5)
    assert by["FAIL_TO_PASS first, then tests on all, then critic"]["container_s"] == pytest.approx(23 * 0.5 + 14 * 1.0)


def test_a_critic_that_calls_a_model_costs_its_recorded_tokens_per_candidate_it_ranks(tmp_path):
    from unittest import mock

    store = make_run(tmp_path, GRID, {"critic": CRITIC})
    set_parses(store, {"e/3": False})
    with mock.patch("agentbon.store.os.fsync"):  # as the judge records them: tokens per ranked candidate
        for s in store.selections():
            if s.selector == "critic":
                ranked = [r.model_copy(update={"tokens": 100}) for r in s.ranked]
                store.save_selection(s.model_copy(update={"ranked": ranked}))
    summary = build_summary(store)
    f = summary["frontier"]
    by = {p["policy"]: p for p in f["policies"]}
    assert f["critic_tokens"] == 2400 and by["critic alone"]["tokens"] == by["critic, tests on top 1"]["tokens"] == 2400
    assert by["parses, then critic alone"]["tokens"] == 2300  # e/3 was dropped before the critic ranked
    md = render_markdown(RunReport.model_validate(summary))
    assert "| critic tokens |" in md and "2,300" in md
    plain = build_summary(make_run(tmp_path / "plain", GRID, {"critic": CRITIC}))["frontier"]
    assert plain["critic_tokens"] == 0 and all(p["tokens"] is None for p in plain["policies"])


def test_a_softmax_draw_among_all_candidates_is_the_exact_estimator_at_k_equal_n():
    import numpy as np

    from agentbon.metrics import softmax_selected_at_k
    from agentbon.report.frontier import softmax_whole

    rng = np.random.default_rng(5)
    logits = rng.normal(0, 2, (30, 12))
    logits[rng.random(logits.shape) < 0.15] = -np.inf  # weight 0
    logits[3] = -np.inf  # a row of weight-0 candidates only: uniform among them
    valid = rng.random(logits.shape) > 0.2
    valid[7] = False  # a row with no sample
    correct = (rng.random(logits.shape) < 0.4).astype(float)
    exact = np.asarray(softmax_selected_at_k(np.where(valid, logits, np.nan), correct, [12]))[:, 0]
    np.testing.assert_allclose(softmax_whole(np.where(valid, logits, np.nan), correct, valid), exact, atol=1e-9)


def test_the_top_group_of_all_candidates_is_the_exact_estimator_at_k_equal_n():
    import numpy as np

    from agentbon.metrics import selected_at_k
    from agentbon.report.frontier import top_group_mean

    rng = np.random.default_rng(6)
    scores = np.round(rng.normal(0, 1, (40, 10)), 0)  # coarse: ties
    scores[rng.random(scores.shape) < 0.2] = -np.inf  # not a candidate: below every candidate
    scores[4] = -np.inf
    valid = rng.random(scores.shape) > 0.2
    valid[9] = False
    correct = (rng.random(scores.shape) < 0.5).astype(float)
    s = np.where(valid, scores, np.nan)
    exact = np.asarray(selected_at_k(s, correct, [10], valid=valid))[:, 0]
    np.testing.assert_allclose(top_group_mean(s, correct, valid), exact, atol=1e-12)
