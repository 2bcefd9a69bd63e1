"""summary.json from synthetic run stores: validity rules, SWE-bench keys, oracle apart, scaling flags."""

from __future__ import annotations

import json

import numpy as np
import pytest
from synth import make_run

from agentbon.errors import ConfigError
from agentbon.metrics import pass_at_k, selected_at_k
from agentbon.report import build_summary
from agentbon.report.schema import HarnessReport

GRID = {"t1": "PFFF", "t2": "FFFF", "t3": "PPPI", "t4": "IIII", "t5": "FUEP"}
SCORES = {
    "tests": {"t1": [1, 0, 0, 0], "t2": [0, 0, 0, 0], "t3": [1, 1, 1, 0], "t5": [0, 0, 0, 1]},
    "critic": {
        "t1": [0.2, 0.9, 0.1, 0.3],
        "t2": [0.5] * 4,
        "t3": [0.1, 0.2, 0.3, 0.9],
        "t4": [],
        "t5": [0.9, 0.1, 0.2, 0.3],
    },
}


@pytest.fixture
def summary(tmp_path):
    return build_summary(make_run(tmp_path, GRID, SCORES))


def test_infra_errors_and_ungraded_rollouts_leave_n(summary):
    per_task = {t["task_id"]: t for t in summary["per_task"]}
    assert (per_task["t3"]["n"], per_task["t3"]["correct"], per_task["t3"]["infra_errors"]) == (3, 3, 1)
    assert (per_task["t4"]["n"], per_task["t4"]["infra_errors"]) == (0, 4)
    assert (per_task["t5"]["n"], per_task["t5"]["correct"]) == (3, 1)  # U (no grade) is out of n; E is a fail
    assert per_task["t3"]["cells"] == "PPPI" and per_task["t5"]["cells"] == "FUFP"
    # t4 has no sample: out of the curves. t3 and t5 have 3 samples: k = 4 is not measured, never clamped.
    n, c = np.array([4, 4, 3, 3]), np.array([1, 0, 3, 1])
    cov = summary["metrics"]["coverage"]["mean"]
    np.testing.assert_allclose(cov[:2], pass_at_k(n, c, [1, 2]).mean(axis=0), atol=1e-6)
    assert cov[2] is None and summary["metrics"]["measured"] == [True, True, False]
    assert summary["metrics"]["tasks_without_sample"] == ["t4"] and summary["metrics"]["curve_tasks"] == 4
    assert per_task["t3"]["coverage"][2] is None and per_task["t4"]["coverage"] == [None, None, None]
    assert summary["rollouts"] == {
        "total": 20,
        "valid": 14,
        "infra_error": 5,
        "grade_infra_error": 0,
        "ungraded": 1,
        "cancelled": 0,
        "graded": 14,
        "empty_patch": 1,
        "left_out": 6,
        "isolation": {"docker": 15},  # finished rollouts (not the 5 infra errors), all in hardened sandboxes
    }


def test_selected_matches_the_metric_on_the_same_arrays(summary):
    tasks = [t for t in GRID if t != "t4"]
    y = np.array([[c == "P" for c in GRID[t]] for t in tasks], dtype=float)
    valid = np.array([[c not in "IU" for c in GRID[t]] for t in tasks])
    critic = np.array([SCORES["critic"][t] for t in tasks], dtype=float)
    want = selected_at_k(np.where(valid, critic, np.nan), y, [1, 2]).mean(axis=0)
    got = summary["metrics"]["selectors"]["critic"]["selected"]["mean"]
    np.testing.assert_allclose(got[:2], want, atol=1e-6)
    assert got[2] is None
    # "tests" made no selection on t4: that task is unsolved for it (t4 has no valid sample anyway).
    assert summary["metrics"]["selectors"]["tests"]["tasks_without_selection"] == 1


def test_swebench_report_keys(summary):
    assert summary["schema"] == "agentbon.summary" and summary["version"] == 7
    assert summary["schema_version"] == 2 and summary["primary_selector"] == "tests"
    assert summary["resolved_ids"] == ["t1", "t3", "t5"] and summary["unresolved_ids"] == ["t2"]
    assert summary["error_ids"] == ["t4"]  # every rollout an infra error: an error, not a failure
    assert summary["submitted_ids"] == ["t1", "t2", "t3", "t5"] and summary["completed_instances"] == 4
    assert summary["total_instances"] == 5 and summary["resolved_instances"] == 3
    rollouts = summary["rollout_report"]
    assert rollouts["error_ids"] == ["t3/3", "t4/0", "t4/1", "t4/2", "t4/3"]
    assert rollouts["empty_patch_ids"] == ["t5/2"] and rollouts["incomplete_ids"] == ["t5/1"]
    json.dumps(summary, allow_nan=False)  # strict JSON: no NaN, no Infinity
    # The file reads as before: schema and version first, the harness's keys together in its order after the run's.
    keys, harness = list(summary), list(HarnessReport.model_fields)
    at = keys.index("total_instances")
    assert keys[:2] == ["schema", "version"] and keys[at : at + len(harness)] == harness and keys[at - 1] == "frontier"


def test_oracle_is_reported_apart_and_equals_coverage(summary):
    assert summary["oracles"] == ["oracle"] and "oracle" not in summary["selectors"]
    assert "oracle" not in summary["scaling"]["selectors"] and "oracle" not in summary["cost"]["selectors"]
    oracle = summary["metrics"]["oracle"]["oracle"]["selected"]["mean"]
    assert oracle == pytest.approx(summary["metrics"]["coverage"]["mean"], abs=1e-9)


def test_unranked_valid_candidates_rank_last(tmp_path):
    grid = {"t": "FFP"}
    store = make_run(tmp_path, grid, {"s": {"t": [0.9, 0.5]}}, oracle=False)  # index 2 missing from ranked
    s = build_summary(store)
    # Scores 0.9, 0.5, -inf: the passing candidate is never picked unless alone in the subset (impossible for k > 1).
    np.testing.assert_allclose(s["metrics"]["selectors"]["s"]["selected"]["mean"], [1 / 3, 0.0, 0.0], atol=1e-6)


def test_verifier_ceiling_is_flagged(tmp_path):
    rng = np.random.default_rng(5)
    grid = {f"t{i}": "".join(rng.choice(["P", "F"], p=[0.3, 0.7]) for _ in range(8)) for i in range(20)}
    flat = {"constant": {t: [0.0] * 8 for t in grid}}  # no information: selected stays at pass@1
    s = build_summary(make_run(tmp_path, grid, flat, oracle=False, selectors_order=["constant"]))
    sel = s["metrics"]["selectors"]["constant"]["selected"]["mean"]
    np.testing.assert_allclose(sel, sel[0], atol=1e-9)
    assert s["scaling"]["selectors"]["constant"]["verifier_ceiling_at_k"] == 1
    stop = s["scaling"]["selectors"]["constant"]["stop"]
    assert (stop["call"], stop["from_k"], stop["slope"]) == ("stops", 1, 0.0)
    assert s["scaling"]["coverage"]["gain"][0] > 0.01


def test_cancelled_rollouts_are_not_samples(tmp_path):
    s = build_summary(make_run(tmp_path, {"t": "PCCC"}, {"s": {"t": [1, 0, 0, 0]}}))
    assert s["per_task"][0]["n"] == 1 and s["rollouts"]["cancelled"] == 3
    assert s["metrics"]["coverage"]["mean"] == [1.0, None, None]  # one sample: k > 1 not measured


def test_bad_report_config_names_the_field(tmp_path):
    store = make_run(tmp_path, {"t": "PF"}, {"s": {"t": [1, 0]}})
    with pytest.raises(ConfigError, match="report.bootstrap"):
        build_summary(store, bootstrap="many")


def test_prices_switch_cost_to_usd_and_break_even(tmp_path):
    store = make_run(tmp_path, {"t": "PF", "u": "FF"}, {"s": {"t": [1, 0], "u": [0, 0]}})
    s = build_summary(store, usd_per_mtok_prompt=1.0, usd_per_mtok_completion=2.0, usd_per_mtok_cached=0.5,
                      usd_per_sandbox_hour=3.6, rl_training_cost=100.0)  # fmt: skip
    cost = s["cost"]
    assert cost["unit"] == "usd"
    # Rollout i: 1000+i prompt (500 cached), 100+i completion, 12+i sandbox seconds at $0.001/s.
    per = [((500 + i) * 1.0 + 500 * 0.5 + (100 + i) * 2.0) / 1e6 + (12 + i) * 0.001 for i in (0, 1)]
    assert cost["sample_cost"] == pytest.approx(sum(per) / 2, rel=1e-5)
    assert cost["scoring_cost"] == pytest.approx(1.5 * 0.001, rel=1e-5)
    be = s["theory"]["break_even"]
    assert be["extra_cost_per_request"] == pytest.approx(cost["sample_cost"] + 2 * cost["scoring_cost"], rel=1e-5)
    assert be["requests"] == pytest.approx(100.0 / be["extra_cost_per_request"], rel=1e-5)


def test_empty_run_renders(tmp_path):
    from agentbon.report import RunReport, render_html, render_markdown
    from agentbon.store import RunStore

    store = RunStore(tmp_path / "empty")
    store.create({"n": 4}, [])
    s = build_summary(store)
    assert s["tasks"] == 0 and s["total_instances"] == 0
    report = RunReport.model_validate(s)
    assert "agentbon report" in render_markdown(report) and "<svg" in render_html(report)
