"""An ensemble eval end to end on the session's Ray: several systems' predictions as rollouts of one best-of-N run,
the real selectors and the real report, every figure checked against brute force over the k-subsets.

Fakes only for the sandbox and the verifier's tests: a patch's grade passes iff it adds a line with ``FIX``, its
evidence iff it adds one with ``EV`` (so the evidence misleads the selectors where it and the grade disagree).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import ray
from eval_support import patch, pred, write_jsonl
from orch_support import fakes, make_tasks
from typer.testing import CliRunner

from agentbon.cli import app
from agentbon.errors import ConfigError
from agentbon.evaluate.ensemble_run import NO_PREDICTION, evaluate_ensemble
from agentbon.metrics import bootstrap_means, percentile_interval
from agentbon.orchestrate.factories import default_report, default_selector
from agentbon.protocols import Candidate
from agentbon.select import make_selector
from agentbon.store import RunStore
from agentbon.testing import FakeVerifier
from tests.metrics.test_selectors_on_subsets import brute

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_session")]


class EvidenceVerifier(FakeVerifier):
    """The fake verifier for the grade; the evidence passes iff the patch adds a line with ``EV``."""

    def verify(self, task, rollout, role):
        verdict = super().verify(task, rollout, role)
        if role != "evidence":
            return verdict
        added = [line for line in rollout.patch.splitlines() if line.startswith("+") and not line.startswith("+++")]
        return verdict.model_copy(update={"status": "pass" if any("EV" in line for line in added) else "fail"})


# Rollout index → (file, model, sample): alpha (a.jsonl), beta's two samples and gamma (b.jsonl).
SYSTEMS = [("a.jsonl", "alpha", 0), ("b.jsonl", "beta", 0), ("b.jsonl", "beta", 1), ("b.jsonl", "gamma", 0)]
# Task → each index's patch text: None no prediction, "" an empty patch, "  " whitespace only.
TABLE: dict[str, list[str | None]] = {
    "a": ["FIX EV", "EV", "EV", None],  # the evidence passes three, the grade one: selection loss
    "b": ["nope", "FIX", "FIX", "FIX"],  # a majority of identical patches that resolve it
    "c": ["", "EV", None, "FIX"],
    "d": ["  ", "nope", "nope", "nope"],
    "e": ["FIX EV", "FIX EV", "FIX EV", "FIX EV"],
    "f": ["EV", None, None, "FIX"],
}
SUITE = [*TABLE, "g"]  # g: no system predicted it


def write_files(tmp_path: Path) -> list[Path]:
    """The predictions files of ``TABLE``: a system's samples of an id in file order, models interleaved."""
    entries: dict[str, list[dict]] = {"a.jsonl": [], "b.jsonl": []}
    for tid, row in TABLE.items():
        for (file, model, _), text in zip(SYSTEMS, row, strict=True):
            if text is not None:
                entries[file].append(pred(tid, patch(text) if text.strip() else text, model=model))
    return [write_jsonl(tmp_path / name, rows) for name, rows in entries.items()]


def factories(tmp_path: Path):
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import a test module
    verifier = functools.partial(EvidenceVerifier, log=str(tmp_path / "verify.log"))
    return dataclasses.replace(fakes(tmp_path), verifier=verifier, selector=default_selector, report=default_report)


def cfg(root: Path, **direct):
    from agentbon.config import load_config

    return load_config(overrides=[f"run_dir={root / 'runs'}", "infra_retries=0", "infra_backoff_s=0"], **direct)


def verifications(root: Path) -> list[str]:
    log = root / "verify.log"
    return log.read_text().splitlines() if log.exists() else []


def brute_figures(store: RunStore, selectors: dict, ks: list[int]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Per task (rows in ``TABLE`` order) and k: coverage (a k-subset holds a resolving rollout) and each selector
    run on every k-subset (tests/metrics's brute force)."""
    rollouts, evidence, grade = store.rollouts(), store.verdicts("evidence"), store.verdicts("grade")
    cov = np.zeros((len(TABLE), len(ks)))
    sel = {name: np.zeros((len(TABLE), len(ks))) for name in selectors}
    for row, tid in enumerate(TABLE):
        cands = [Candidate(rollout=rollouts[f"{tid}/{i}"], evidence=evidence.get(f"{tid}/{i}"),
                           grade=grade.get(f"{tid}/{i}")) for i in range(len(SYSTEMS))]  # fmt: skip
        passed = [c.grade is not None and c.grade.status == "pass" for c in cands]
        for j, k in enumerate(ks):
            subsets = list(itertools.combinations(range(len(cands)), k))
            cov[row, j] = sum(any(passed[i] for i in s) for s in subsets) / len(subsets)
            for name, selector in selectors.items():
                sel[name][row, j] = brute(selector, tid, cands, list(range(len(cands))), k)
    return cov, sel


def near(value):
    """summary.json keeps 6 decimals."""
    return pytest.approx(value, abs=1e-6)


def band(boot: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = percentile_interval(boot, confidence)
    return lo, hi


def test_an_ensemble_reports_selection_across_systems_as_brute_force_does(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, SUITE)
    files = write_files(tmp_path)
    result = evaluate_ensemble(tasks, files, cfg(tmp_path), suite="s.jsonl", factories=factories(tmp_path))
    assert result.exit_code == 0 and result.ensemble.not_predicted == ["g"]
    store = RunStore(result.path)
    config = store.config()
    assert config is not None and config.n == 4 and config.select.selectors == ["tests", "majority", "random", "oracle"]
    # Every slot is a rollout; its grade is the table's (FIX), a missing prediction an empty patch that fails.
    rollouts, grades = store.rollouts(), store.verdicts("grade")
    assert sorted(rollouts) == sorted(f"{t}/{i}" for t in TABLE for i in range(4))
    for tid, row in TABLE.items():
        for i, text in enumerate(row):
            r = rollouts[f"{tid}/{i}"]
            assert r.exit_status == (NO_PREDICTION if text is None else "Prediction"), (tid, i)
            assert grades[r.rollout_id].status == ("pass" if text and "FIX" in text else "fail"), (tid, i)
    # Where each rollout came from, in its event.
    sources = {f"{e['record']['task_id']}/{e['record']['index']}": e["source"] for e in store.events("rollout")}
    assert sources["c/3"] == {"system": f"{files[1]}:gamma", "file": str(files[1]), "model": "gamma", "sample": 0,
                              "line": 7}  # fmt: skip
    assert sources["c/2"]["line"] is None and sources["a/2"]["sample"] == 1
    # Only real patches are verified, in both roles; empty, blank and missing ones never are.
    verified = {line.split()[0] for line in verifications(tmp_path)}
    assert verified and all(TABLE[rid.split("/")[0]][int(rid.split("/")[1])] not in (None, "", "  ") for rid in verified)
    assert {line.split()[1] for line in verifications(tmp_path)} == {"evidence", "grade"}

    summary = json.loads((result.path / "summary.json").read_text())
    ks, metrics = summary["ks"], summary["metrics"]
    assert ks == [1, 2, 4] and [t["task_id"] for t in summary["per_task"]] == list(TABLE)
    assert all(t["n"] == 4 for t in summary["per_task"])
    selectors = {name: make_selector(name, config.select, seed=config.model.seed) for name in ("tests", "majority", "random")}
    cov, sel = brute_figures(store, selectors, ks)
    boot = bootstrap_means(np.stack([cov, *sel.values()], axis=1), n_boot=config.report.bootstrap, seed=config.report.seed)
    confidence = config.report.confidence
    p1 = cov[:, 0].mean()
    assert metrics["pass@1"]["mean"] == near(p1)
    assert metrics["coverage"]["mean"] == near(cov.mean(axis=0))
    lo, hi = band(boot[:, 0], confidence)
    assert (metrics["coverage"]["lo"], metrics["coverage"]["hi"]) == (near(lo), near(hi))
    assert (metrics["pass@1"]["lo"], metrics["pass@1"]["hi"]) == (near(lo[0]), near(hi[0]))
    for s, name in enumerate(selectors, start=1):
        got = metrics["selectors"][name]
        mean = sel[name].mean(axis=0)
        assert got["selected"]["mean"] == near(mean), name
        assert got["loss"]["mean"] == near(cov.mean(axis=0) - mean), name
        gap = cov.mean(axis=0) - p1
        recovered = np.where(np.abs(gap) > 1e-12, (mean - p1) / np.where(np.abs(gap) > 1e-12, gap, 1), 1.0)
        assert got["gap_recovered"]["mean"] == near(recovered), name
        boot_gap = boot[:, 0] - boot[:, 0, :1]
        boot_recovered = np.where(np.abs(boot_gap) > 1e-12, (boot[:, s] - boot[:, 0, :1]) / np.where(
            np.abs(boot_gap) > 1e-12, boot_gap, 1), 1.0)  # fmt: skip
        for key, samples in (("selected", boot[:, s]), ("loss", boot[:, 0] - boot[:, s]),
                             ("gap_recovered", boot_recovered)):  # fmt: skip
            lo, hi = band(samples, confidence)
            assert (got[key]["lo"], got[key]["hi"]) == (near(lo), near(hi)), (name, key)
    # Per doubling: the gains and the least-squares fit metric ~ a + b log2 k (b in points) of each curve.
    curves = {"coverage": (cov.mean(axis=0), summary["scaling"]["coverage"])}
    curves.update({name: (sel[name].mean(axis=0), summary["scaling"]["selectors"][name]) for name in selectors})
    for name, (means, scaling) in curves.items():
        slope, a = np.polyfit(np.log2(ks), means, 1)
        fitted = a + slope * np.log2(ks)
        r2 = 1 - ((means - fitted) ** 2).sum() / ((means - means.mean()) ** 2).sum()
        assert scaling["gain"] == near(np.diff(means)), name
        fit = scaling["fit"]
        assert (fit["a"], fit["points_per_doubling"], fit["r2"]) == (
            near(a), pytest.approx(100 * slope, abs=1e-3), pytest.approx(r2, abs=1e-4)), name  # fmt: skip
    # The evidence misleads on a (three pass it, one resolves) and b (none passes it): tests loses there.
    assert metrics["selectors"]["tests"]["loss"]["mean"][2] > 0
    assert "tests" in (result.path / "report.md").read_text()

    # One harness report per rollout index: what that system (and sample) submitted.
    by_index = {s.index: s.report for s in result.systems}
    for i in range(4):
        submitted = [t for t in TABLE if TABLE[t][i] is not None]
        resolved = [t for t in TABLE if TABLE[t][i] and "FIX" in TABLE[t][i]]
        assert by_index[i].submitted_ids == submitted and by_index[i].resolved_ids == resolved, i
        assert by_index[i].total_instances == len(SUITE) and by_index[i].model_name_or_path == SYSTEMS[i][1]
    assert by_index[0].empty_patch_ids == ["c"] and by_index[0].error_ids == ["d"]
    assert by_index[3].instances["c"].rollout_id == "c/3"
    index = json.loads((result.path / "systems.json").read_text())
    assert [(r["index"], r["model"], r["sample"]) for r in index] == [(i, m, j) for i, (_, m, j) in enumerate(SYSTEMS)]
    assert all((result.path / r["eval_report"]).is_file() for r in index)


def test_the_same_inputs_resume_and_a_changed_prediction_is_refused(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, SUITE)
    files = write_files(tmp_path)
    first = evaluate_ensemble(tasks, files, cfg(tmp_path), suite="s.jsonl", factories=factories(tmp_path))
    done = len(verifications(tmp_path))
    again = evaluate_ensemble(tasks, files, cfg(tmp_path), suite="s.jsonl", factories=factories(tmp_path))
    assert again.run_id == first.run_id and again.batch is None and len(verifications(tmp_path)) == done
    assert [s.report for s in again.systems] == [s.report for s in first.systems] and again.exit_code == 0
    # b.jsonl's line 7 (gamma's c) changes: another default run; into the first run by name, refused before any work.
    lines = files[1].read_text().splitlines()
    lines[6] = json.dumps(pred("c", patch("FIX changed"), model="gamma"))
    files[1].write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=rf"{files[1]}:7: 'c': rollout c/3 of run {first.run_id} holds another patch"):
        evaluate_ensemble(tasks, files, cfg(tmp_path, run_id=first.run_id), suite="s.jsonl", factories=factories(tmp_path))
    assert len(verifications(tmp_path)) == done and RunStore(first.path).rollouts()["c/3"].patch == patch("FIX")


def test_cli_takes_several_files_after_predictions_and_ensemble_for_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = make_tasks(tmp_path, SUITE)
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    a, b = write_files(tmp_path)
    monkeypatch.setattr("agentbon.cli.eval.make_factories", lambda: factories(tmp_path))

    def invoke(*args: str):
        argv = ["eval", str(suite), "--run-dir", str(tmp_path / "runs"), "-c", "infra_retries=0", *args]
        return CliRunner().invoke(app, argv, catch_exceptions=False)

    both = invoke("--predictions", str(a), str(b))
    assert both.exit_code == 0, both.output
    assert f"rollout 3: {b}:gamma: resolved 4 (57.1% of 7)" in both.output and "N = 4 rollouts per task" in both.output
    assert "not in the run: 1 task(s) of the suite no system predicted (g)" in both.output and "report.md" in both.output
    one = invoke("--predictions", str(b), "--ensemble")
    assert one.exit_code == 0 and "N = 3 rollouts per task" in one.output, one.output
    refused = invoke("-p", str(a), "-p", str(b), "--model", "alpha")
    assert refused.exit_code == 2 and "an ensemble grades every model" in refused.output
    several = invoke("--predictions", str(b))  # one file of several models, no --ensemble: as before
    assert several.exit_code == 2 and "--model" in several.output
