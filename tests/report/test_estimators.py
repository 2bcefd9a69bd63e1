"""The report's estimators (docs/estimators.md): exact random and soft-bon, early stop, k > n, targets, denominators."""

from __future__ import annotations

import json
from unittest import mock

import numpy as np
import pytest
from synth import make_run

from agentbon.errors import ConfigError
from agentbon.metrics import pass_at_k
from agentbon.report import RunReport, build_report, build_summary, read_summary, render_markdown, write_reports
from agentbon.report.scaling import stop_call
from agentbon.types import Rollout, Verdict
from tests.metrics.softmax_brute import brute

GRID = {"a": "PFFFFPFF", "b": "FFFFFFFF", "c": "PPFFPFFF", "d": "FFPFFFFF"}


def _y(grid: dict[str, str]) -> np.ndarray:
    return np.array([[c == "P" for c in codes] for codes in grid.values()], dtype=float)


def test_random_selected_is_pass_at_1_at_every_k(tmp_path):
    rng = np.random.default_rng(0)
    draws = {"random": {t: list(rng.random(8)) for t in GRID}}  # one seeded draw, as the selector records
    s = build_summary(make_run(tmp_path, GRID, draws, oracle=False, selectors_order=["random"]))
    block = s["metrics"]["selectors"]["random"]
    assert block["estimator"] == "uniform"
    assert block["selected"]["mean"] == pytest.approx([_y(GRID).mean()] * 4, abs=1e-6)
    assert s["metrics"]["pass@1"]["mean"] == pytest.approx(_y(GRID).mean(), abs=1e-6)


def test_soft_bon_selected_is_the_enumerated_expectation(tmp_path):
    rng = np.random.default_rng(1)
    logits = {t: list(rng.normal(size=8) * 2) for t in GRID}
    s = build_summary(make_run(tmp_path, GRID, {"soft-bon": logits}, oracle=False, selectors_order=["soft-bon"]))
    block = s["metrics"]["selectors"]["soft-bon"]
    assert block["estimator"] == "softmax"
    y = _y(GRID)
    want = [np.mean([brute(logits[t], list(y[i]), k) for i, t in enumerate(GRID)]) for k in (1, 2, 4, 8)]
    assert block["selected"]["mean"] == pytest.approx(want, abs=1e-6)


def _early_stop(store, task: str, not_run: list[int], fixed: int | None, saved: float = 30.0) -> None:
    fields = {"fixed": fixed} if fixed is not None else {}
    with mock.patch("agentbon.store.os.fsync"):
        store.append("early_stop", task_id=task, skipped=[f"{task}/{i}" for i in not_run], cancelled=[],
                     rollouts_not_run=len(not_run), est_sandbox_s_saved=saved, **fields)  # fmt: skip


def test_early_stopped_tasks_draw_curves_from_the_fixed_part_only(tmp_path):
    # "e" passed at index 4 and stopped: rollouts 5.. never ran; 0..3 were fixed in advance (all fail).
    grid = {"e": "FFFFP...", "f": "FFFFFFFF", "g": "PFFFFFFF"}
    store = make_run(tmp_path, grid, {"tests": {t: [float(c == "P") for c in grid[t]] for t in grid}})
    _early_stop(store, "e", [5, 6, 7], fixed=4)
    _early_stop(store, "g", [], fixed=None)  # no fixed field: the config's, else 4
    s = build_summary(store)
    rows = {t["task_id"]: t for t in s["per_task"]}
    assert (rows["e"]["n"], rows["e"]["curve_n"], rows["e"]["early_stopped"]) == (5, 4, True)
    assert (rows["f"]["curve_n"], rows["f"]["early_stopped"]) == (8, False)
    assert rows["g"]["curve_n"] == 4
    # Curves from e: FFFF, f: 8 fails, g: PFFF — the pass at e/4 is left out; k = 8 is not measured.
    n, c = np.array([4, 8, 4]), np.array([0, 0, 1])
    cov = s["metrics"]["coverage"]["mean"]
    assert cov[:3] == pytest.approx(list(pass_at_k(n, c, [1, 2, 4]).mean(axis=0)), abs=1e-6)
    assert cov[3] is None
    # The winner still comes from every rollout: e/4 is e's winner.
    assert rows["e"]["winners"]["tests"] == "e/4" and "e" in s["resolved_ids"]
    early = s["early_stop"]
    assert early["rollouts_not_run"] == 3 and early["est_sandbox_s_saved"] == 60.0
    assert [t["task_id"] for t in early["tasks"]] == ["e", "g"] and early["tasks"][0]["fixed"] == 4
    md = render_markdown(RunReport.model_validate(s))
    assert "early stop: rollouts not run / est. sandbox-seconds saved | 3 / 60" in md
    assert "Early stop cut 2 tasks short; their curves use only rollouts 0..3" in md and ": e, g." in md


def test_k_above_a_tasks_sample_count_is_not_measured(tmp_path):
    grid = {"a": "PFFF", "b": "FPII"}
    s = build_summary(make_run(tmp_path, grid, {"tests": {"a": [1, 0, 0, 0], "b": [0, 1, 0, 0]}}))
    assert s["metrics"]["measured"] == [True, True, False]
    assert s["metrics"]["selectors"]["tests"]["selected"]["mean"][2] is None
    assert s["scaling"]["coverage"]["gain"][1] is None
    md = render_markdown(RunReport.model_validate(s))
    assert "| 4 | not measured |" in md and "coverage@4 | not measured" in md
    assert "not measured: k above 2 (a task in the curves has only 2 samples" in md


def test_a_target_already_reached_is_not_extrapolated(tmp_path):
    grid = {t: "PPPPPPPP" for t in "abc"}
    s = build_summary(make_run(tmp_path, grid, {"tests": {t: [1.0] * 8 for t in grid}}))
    targets = s["scaling"]["selectors"]["tests"]["targets"]
    assert {"target": 1.0, "reached_at_k": 1, "extrapolated_k": None} in targets
    md = render_markdown(RunReport.model_validate(s))
    assert "100.0% reached at k = 1" in md and "needs k ≈" not in md


def test_one_noisy_doubling_does_not_stop_the_call():
    ks = [1, 2, 4, 8, 16]
    mean = np.cumsum([0.20, 0.05, 0.005, 0.095, 0.10])  # gains 5, 0.5, 9.5, 10 points
    boot = mean + np.random.default_rng(0).normal(scale=0.01, size=(400, 5))
    call = stop_call(ks, mean, boot, 0.95)
    assert call.call == "pays" and call.from_k == 4  # the last two doublings: about 10 points each
    flat = np.cumsum([0.2, 0.05, 0.003, 0.002, 0.002])
    stops = stop_call(ks, flat, flat + np.random.default_rng(1).normal(scale=0.001, size=(400, 5)), 0.95)
    assert (stops.call, stops.from_k) == ("stops", 2)


def test_a_grade_infra_error_is_left_out_of_n(tmp_path):
    store = make_run(tmp_path, {"t": "PFFF", "u": "FFFP"}, {"tests": {"t": [1, 0, 0, 0], "u": [0, 0, 0, 1]}})
    with mock.patch("agentbon.store.os.fsync"):
        store.save_verdict(Verdict(run_id="run-synth", task_id="t", rollout_id="t/1", role="grade",
                                   status="infra_error", reason="DockerError: engine gone"))  # fmt: skip
    s = build_summary(store)
    rows = {t["task_id"]: t for t in s["per_task"]}
    assert (rows["t"]["n"], rows["t"]["cells"]) == (3, "PGFF")
    assert s["rollouts"]["grade_infra_error"] == 1 and s["rollouts"]["left_out"] == 1
    assert s["infra"]["verifications"] == 1 and s["infra"]["verifications_by_kind"] == {"DockerError": 1}
    assert s["metrics"]["pass@1"]["mean"] == pytest.approx((1 / 3 + 1 / 4) / 2, abs=1e-6)
    md = render_markdown(RunReport.model_validate(s))
    assert "Left out of n (1): 1 grade verifications that hit infra errors" in md


def test_summary_json_is_a_versioned_model_that_reads_back(tmp_path):
    store = make_run(tmp_path, {"t": "PFIF"}, {"tests": {"t": [1, 0, 0, 0]}})
    with mock.patch("agentbon.store.os.fsync"):
        for retry in (True, False):
            store.append("infra", unit="rollout", task_id="t", rollout_id="t/2", attempt=1, error="SandboxGone",
                         message="container vanished", retry=retry)  # fmt: skip
    report = build_report(store)
    assert (report.infra.attempts_failed, report.infra.attempts_retried) == (2, 1)
    assert report.infra.attempts_by_kind == {"SandboxGone": 2} and report.infra.rollouts == 1
    path = write_reports(store, report)["summary"]
    raw = json.loads(path.read_text())
    assert raw["schema"] == "agentbon.summary" and raw["version"] == 7 and "pass@1" in raw["metrics"]
    assert read_summary(path) == report
    raw["version"] = 1
    path.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match="version 1"):
        read_summary(path)


def test_rollouts_that_ran_as_root_are_counted_and_named(tmp_path):
    store = make_run(tmp_path, {"t": "PF"}, {"tests": {"t": [1, 0]}})
    why = "user 10001:10001 cannot work in img (the interpreter is not executable): commands run as root"
    with mock.patch("agentbon.store.os.fsync"):
        store.save_rollout(Rollout(run_id="run-synth", task_id="t", index=2, status="submitted", patch="",
                                   isolation=f"docker (as root: {why})"), [])  # fmt: skip
    s = build_summary(store)
    assert s["rollouts"]["isolation"] == {"docker": 2, f"docker (as root: {why})": 1}
    md = render_markdown(RunReport.model_validate(s))
    assert f"Weaker isolation than a hardened sandbox: 1 rollout docker (as root: {why})." in md
    plain = build_summary(make_run(tmp_path / "plain", {"t": "PF"}, {"tests": {"t": [1, 0]}}))
    assert "Weaker isolation" not in render_markdown(RunReport.model_validate(plain))


def test_soft_bon_too_large_for_the_exact_sum_is_estimated_and_says_so(tmp_path):
    rng = np.random.default_rng(2)
    logits = {t: list(rng.normal(size=8) * 2) for t in GRID}
    store = make_run(tmp_path, GRID, {"soft-bon": logits}, oracle=False, selectors_order=["soft-bon"])
    exact = build_summary(store)
    assert exact["metrics"]["selectors"]["soft-bon"]["estimate"] is None  # a run this small: the exact sum
    assert "unbiased estimate" not in render_markdown(RunReport.model_validate(exact))
    s = build_summary(store, soft_bon="estimate")
    block = s["metrics"]["selectors"]["soft-bon"]
    assert block["estimate"]["draws"] == 64  # a small run gets the most draws
    se = block["estimate"]["se"]
    assert se[0] == pytest.approx(0.0, abs=1e-9) and all(v > 0 for v in se[1:3])  # k = 1 is exact in every draw
    for got, want, err in zip(block["selected"]["mean"], exact["metrics"]["selectors"]["soft-bon"]["selected"]["mean"], se, strict=True):
        assert abs(got - want) <= 5 * err + 1e-6
    md = render_markdown(RunReport.model_validate(s))
    assert "soft-bon: selected@k is an unbiased estimate of the expectation of its draw, not the exact sum" in md
    assert "(64 draw(s) of each kind per task" in md and "selected@k is the exact expectation" not in md
    assert read_summary_roundtrip(tmp_path, s)["metrics"]["selectors"]["soft-bon"]["estimate"] == block["estimate"]
    with pytest.raises(ConfigError, match="report.soft_bon"):
        build_summary(store, soft_bon="approximate")


def read_summary_roundtrip(tmp_path, s: dict) -> dict:
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(s))
    return read_summary(path).to_dict()


def test_auto_sums_exactly_up_to_its_work_limit(monkeypatch):
    from agentbon.report import compute

    rng = np.random.default_rng(4)
    correct = (rng.random((30, 12)) < rng.random((30, 1))).astype(float)
    valid = rng.random((30, 12)) > 0.1
    scores = {"soft-bon": np.where(valid, rng.normal(size=(30, 12)), np.nan), "tests": np.where(valid, correct, np.nan)}
    est: dict = {"soft-bon": "softmax"}
    exact = compute.compute_curves(correct, valid, scores, [1, 2, 4, 8], n_boot=50, estimators=est)
    assert exact.estimated == {}
    monkeypatch.setattr(compute, "EXACT_SOFTMAX_WORK", compute.exact_softmax_work(valid.sum(axis=1)) - 1)
    estimated = compute.compute_curves(correct, valid, scores, [1, 2, 4, 8], n_boot=50, estimators=est)
    assert list(estimated.estimated) == ["soft-bon"]  # the rankings stay exact
    np.testing.assert_array_equal(estimated.per_task_selected["tests"], exact.per_task_selected["tests"])
    gap = np.abs(estimated.selected["soft-bon"].mean - exact.selected["soft-bon"].mean)
    assert (gap <= 5 * estimated.estimated["soft-bon"].se + 1e-9).all()
    forced = compute.compute_curves(correct, valid, scores, [1, 2, 4, 8], n_boot=50, estimators=est, softmax="exact")
    np.testing.assert_array_equal(forced.per_task_selected["soft-bon"], exact.per_task_selected["soft-bon"])
