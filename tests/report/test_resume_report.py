"""A run resumed with fewer tasks reports the tasks of its latest invocation only (synthetic stores)."""

from __future__ import annotations

import pytest
from synth import make_run

from agentbon.report import build_summary
from agentbon.report.data import load_run

GRID = {"a": "PFF", "b": "FFF", "c": "PPP"}


def test_a_resume_without_a_task_reports_only_the_tasks_it_ran(tmp_path) -> None:
    store = make_run(tmp_path, GRID)
    everything = build_summary(store)
    assert everything["tasks"] == 3
    kept = [t for t in store.tasks() if t.task_id != "c"]
    store.create(store.config_data(), kept)  # what a resume with a suite without c records
    summary = build_summary(store)
    assert [t["task_id"] for t in summary["per_task"]] == ["a", "b"] and summary["tasks"] == 2
    # Independently: pass@1 over a and b is the mean of their pass fractions, pass@3 whether any passed.
    passes = {t: codes.count("P") / len(codes) for t, codes in GRID.items() if t != "c"}
    coverage = summary["metrics"]["coverage"]["mean"]
    assert coverage[0] == pytest.approx(sum(passes.values()) / 2, abs=1e-6)
    assert coverage[-1] == pytest.approx(sum(1 for t in passes if "P" in GRID[t]) / 2, abs=1e-6)
    assert summary["rollouts"]["total"] == 6 and summary["rollouts"]["graded"] == 6
    data = load_run(store)
    assert {v.task_id for v in data.grades.values()} == {v.task_id for v in data.evidence.values()} == {"a", "b"}
    assert set(data.selections["oracle"]) == {"a", "b"}
    # The records of c stay: a resume with it brings it back, nothing run again.
    store.create(store.config_data(), store.definitions())
    assert build_summary(store)["per_task"] == everything["per_task"]


def test_a_run_of_an_older_version_reports_every_task_it_stored(tmp_path) -> None:
    store = make_run(tmp_path, GRID)
    log = store.path / "events.jsonl"
    log.write_text("".join(line for line in log.read_text().splitlines(keepends=True) if '"type": "tasks"' not in line))
    assert store.current_task_ids() is None
    assert [t["task_id"] for t in build_summary(store)["per_task"]] == ["a", "b", "c"]
