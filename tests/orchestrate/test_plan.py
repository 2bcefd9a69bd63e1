"""The planner's resume rules and seeds (no Ray)."""

from __future__ import annotations

from pathlib import Path

from orch_support import config, make_tasks

from agentbon.orchestrate.plan import derive_seed, plan_run
from agentbon.store import RunStore
from agentbon.types import Rollout, Verdict


def rollout(task: str, i: int, status: str = "submitted", patch: str = "") -> Rollout:
    return Rollout(run_id="r", task_id=task, index=i, status=status, patch=patch)


def verdict(task: str, i: int, role: str, status: str) -> Verdict:
    return Verdict(run_id="r", task_id=task, rollout_id=f"{task}/{i}", role=role, status=status)


def test_seeds_are_stable_distinct_and_31_bit() -> None:
    seeds = {derive_seed(0, t, i) for t in ("a", "b") for i in range(50)}
    assert len(seeds) == 100 and all(0 <= s < 2**31 for s in seeds)
    assert derive_seed(0, "a", 3) == derive_seed(0, "a", 3) != derive_seed(1, "a", 3)


def test_fresh_plan_is_task_major(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a", "b"])
    plan = plan_run(tasks, config(tmp_path, n=3), RunStore(tmp_path / "run"), "r")
    assert [s.rollout_id for s in plan.specs] == ["a/0", "a/1", "a/2", "b/0", "b/1", "b/2"]
    assert plan.specs[4].seed == derive_seed(0, "b", 1) and plan.specs[0].run_id == "r"


def test_resume_skips_finished_reruns_infra_and_verifies_missing(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a"])
    store = RunStore(tmp_path / "run")
    store.save_rollout(rollout("a", 0))
    store.save_rollout(rollout("a", 1, "infra_error"))
    store.save_rollout(rollout("a", 2, "agent_error"))
    store.save_verdict(verdict("a", 0, "evidence", "pass"))
    store.save_verdict(verdict("a", 0, "grade", "pass"))
    store.save_verdict(verdict("a", 2, "grade", "infra_error"))
    plan = plan_run(tasks, config(tmp_path, n=4), store, "r")
    assert [s.rollout_id for s in plan.specs] == ["a/1", "a/3"]  # infra_error runs again, N raised to 4
    assert sorted(plan.finished) == ["a/0", "a/2"]
    assert [r.rollout_id for r in plan.verify] == ["a/2"]  # no evidence verdict; grade was an infra error


def test_passed_migration_task_skips_its_remaining_rollouts(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["m"], migration=True)
    store = RunStore(tmp_path / "run")
    store.save_rollout(rollout("m", 1))
    store.save_verdict(verdict("m", 1, "grade", "pass"))
    plan = plan_run(tasks, config(tmp_path, "early_stop_fixed=1", n=3), store, "r")
    assert [s.rollout_id for s in plan.specs] == ["m/0"]  # the fixed part always runs
    assert plan.skipped == {"m": ["m/2"]} and plan.stopped == {"m"}
    plan = plan_run(tasks, config(tmp_path, "early_stop_fixed=3", n=4), store, "r")
    assert [s.rollout_id for s in plan.specs] == ["m/0", "m/2"] and plan.skipped == {"m": ["m/3"]}
    plan = plan_run(tasks, config(tmp_path, "early_stop=false", n=3), store, "r")
    assert [s.rollout_id for s in plan.specs] == ["m/0", "m/2"]
