"""Failures classified by where they happen, through the real driver on the session's local Ray (fakes for model,
agent, sandbox, verifier, selector): outside the agent's own loop an exception no row names is infrastructure;
a task that cannot be prepared is recorded once, as the task's; a selection that fails on infrastructure is a
leftover (out of that selector's figures and exports, exit 3, selected again on resume). docs/failure-taxonomy.md."""

from __future__ import annotations

import itertools
import json
import shutil
from math import comb
from pathlib import Path

import pytest
from orch_support import config, fakes, make_tasks

from agentbon.orchestrate import run_batch
from agentbon.orchestrate.events import Infra, PrepareFailed, SelectorError
from agentbon.store import RunStore

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_session")]

KINDS = {"permission": "PermissionError", "reset": "ConnectionResetError", "clone": "CalledProcessError",
         "read-only": "OSError"}  # fmt: skip


@pytest.mark.parametrize("error", sorted(KINDS))
def test_a_sandbox_that_fails_to_open_is_infra_retried_not_a_model_failure(tmp_path: Path, error: str) -> None:
    tasks = make_tasks(tmp_path, ["a"])
    f = fakes(tmp_path, {"a/0": "FIX"}, fail_open={"a/0": 1}, open_error=error)
    result = run_batch(tasks, config(tmp_path, "infra_retries=1", n=1, run_id="r"), factories=f)
    store = RunStore(result.path)
    r = store.rollouts()["a/0"]
    assert (r.status, r.attempt) == ("submitted", 2)  # retried: the scripted outcome, not agent_error on attempt 1
    assert [(e.unit, e.error, e.retry) for e in store.recorded(Infra)] == [("rollout", KINDS[error], True)]
    assert store.verdicts("grade")["a/0"].status == "pass" and result.infra_left.total == 0


@pytest.mark.parametrize("error", ["permission", "reset", "clone"])
def test_a_preparation_that_fails_once_is_infra_retried_and_every_rollout_runs(tmp_path: Path, error: str) -> None:
    tasks = make_tasks(tmp_path, ["a"])
    f = fakes(tmp_path, {"a/1": "FIX"}, fail_prepare={"a": 1}, prepare_error=error)
    result = run_batch(tasks, config(tmp_path, "infra_retries=1", n=3, run_id="r"), factories=f)
    store = RunStore(result.path)
    assert {rid: r.status for rid, r in store.rollouts().items()} == {f"a/{i}": "submitted" for i in range(3)}
    assert [(e.unit, e.error, e.retry) for e in store.recorded(Infra)] == [("prepare", KINDS[error], True)]
    assert store.recorded(PrepareFailed) == [] and result.infra_left.total == 0


def test_a_task_whose_repository_is_broken_records_one_task_failure_not_n_model_failures(tmp_path: Path) -> None:
    from agentbon.report.summary import build_report

    tasks = make_tasks(tmp_path, ["a"]) + make_tasks(tmp_path / "other", ["b"])
    moved = tmp_path / "other" / "elsewhere"
    shutil.move(tmp_path / "other" / "repo", moved)  # b's repository is gone: cloning it fails on every node
    cfg = config(tmp_path, "infra_retries=1", n=3, run_id="r")
    result = run_batch(tasks, cfg, factories=fakes(tmp_path, {"a/0": "FIX"}))
    store = RunStore(result.path)
    assert sorted(store.rollouts()) == ["a/0", "a/1", "a/2"]  # none of b's: not 3 model failures, not 3 records
    failed = store.recorded(PrepareFailed)
    assert [(e.task_id, e.error, e.attempts, e.rollouts) for e in failed] == [
        ("b", "CalledProcessError", 2, 3)
    ]
    assert [(e.unit, e.retry) for e in store.recorded(Infra)] == [("prepare", True), ("prepare", False)]
    assert result.infra_left.tasks == {"CalledProcessError": 1} and result.infra_left.total == 1  # exit 3
    assert "1 task not prepared (CalledProcessError 1)" in result.infra_left.describe()
    report = build_report(store).to_dict()
    assert list(report["infra"]["tasks_not_prepared"]) == ["b"] and report["metrics"]["curve_tasks"] == 1
    assert report["per_task"][1]["task_id"] == "b" and report["per_task"][1]["n"] == 0
    shutil.move(moved, tmp_path / "other" / "repo")  # the repository is back: the same command runs b
    again = run_batch(tasks, cfg, factories=fakes(tmp_path, {"a/0": "FIX"}))
    assert (again.planned, again.infra_left.total) == (3, 0)
    assert sorted(store.rollouts()) == [f"{t}/{i}" for t in "ab" for i in range(3)]
    assert store.prepare_failures() == {}


def pass_at_k(n: int, c: int, k: int) -> float:
    """Brute force over every k-subset of n samples with c correct: the share holding a correct one."""
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(i < c for i in s) for s in subsets) / len(subsets)


def tied_pick_at_k(n: int, c: int, k: int) -> float:
    """Brute force: a uniform pick inside each k-subset (every candidate tied), averaged over the subsets."""
    subsets = list(itertools.combinations(range(n), k))
    return sum(sum(i < c for i in s) / k for s in subsets) / len(subsets)


def test_a_judge_that_fails_on_infrastructure_leaves_the_task_out_until_a_resume_selects_it(tmp_path: Path) -> None:
    from agentbon.export.swebench import export_swebench
    from agentbon.report.data import load_run
    from agentbon.report.summary import build_report

    tasks = make_tasks(tmp_path, ["a", "b"])
    down = tmp_path / "judge-down"
    down.write_text("a\n")
    table = {"a/0": "FIX", "a/1": "FIX", "b/0": "FIX"}  # a: 2 of 2 correct, b: 1 of 2
    cfg = config(tmp_path, "select.selectors=[first, critic, oracle]", n=2, run_id="r")
    result = run_batch(tasks, cfg, factories=fakes(tmp_path, table, judge_down=down))
    store = RunStore(result.path)
    [error] = store.recorded(SelectorError)
    assert (error.task_id, error.selector, error.infra) == ("a", "critic", True)
    assert error.error.startswith("ServerFailure: ")
    chosen = {(s.task_id, s.selector) for s in store.selections()}
    assert ("a", "critic") not in chosen and {("a", "first"), ("b", "critic")} <= chosen
    assert result.infra_left.selections == {"ServerFailure": 1} and result.infra_left.total == 1  # exit 3
    assert "1 selection (ServerFailure 1)" in result.infra_left.describe()

    report = build_report(store).to_dict()
    critic, first = report["metrics"]["selectors"]["critic"], report["metrics"]["selectors"]["first"]
    assert critic["tasks_left_out"] == {"a": error.error} and first["tasks_left_out"] == {}
    ks = report["ks"]
    # The critic's curves are over b alone (a left out, never scored 0); the other selectors' over both tasks.
    assert critic["selected"]["mean"] == pytest.approx([tied_pick_at_k(2, 1, k) for k in ks])
    assert critic["loss"]["mean"] == pytest.approx([pass_at_k(2, 1, k) - tied_pick_at_k(2, 1, k) for k in ks])
    both = [(tied_pick_at_k(2, 2, k) + tied_pick_at_k(2, 1, k)) / 2 for k in ks]
    assert first["selected"]["mean"] == pytest.approx(both)
    assert report["metrics"]["coverage"]["mean"] == pytest.approx([(1 + pass_at_k(2, 1, k)) / 2 for k in ks])
    assert critic["winners"] == 1 and critic["winner_accuracy"] == pytest.approx(1.0)  # b's winner, over b

    out = tmp_path / "export"
    files = export_swebench(load_run(store), out, selector="critic")
    lines = [json.loads(line) for line in files["critic"].read_text().splitlines()]
    assert [line["instance_id"] for line in lines] == ["b"]  # a is not exported with an empty patch
    files = export_swebench(load_run(store), out, selector="first")
    assert [json.loads(line)["instance_id"] for line in files["first"].read_text().splitlines()] == ["a", "b"]

    down.unlink()  # the judge is back: the same command selects a, and nothing else runs
    again = run_batch(tasks, cfg, factories=fakes(tmp_path, table, judge_down=down))
    assert (again.planned, again.infra_left.total) == (0, 0)
    assert ("a", "critic") in {(s.task_id, s.selector) for s in store.selections()}
    assert store.selector_failures() == {}
    assert build_report(store).to_dict()["metrics"]["selectors"]["critic"]["tasks_left_out"] == {}


def test_a_reselection_that_fails_does_not_leave_the_stale_selection_standing(tmp_path: Path) -> None:
    from agentbon.report.data import load_run

    tasks = make_tasks(tmp_path, ["a"])
    down = tmp_path / "judge-down"
    cfg = ["select.selectors=[first, critic, oracle]"]
    run_batch(tasks, config(tmp_path, *cfg, n=1, run_id="r"), factories=fakes(tmp_path, judge_down=down))
    store = RunStore(tmp_path / "runs" / "r")
    assert ("a", "critic") in {(s.task_id, s.selector) for s in store.selections()}
    down.write_text("a\n")  # more rollouts: a is selected again, and the judge fails this time
    more = run_batch(tasks, config(tmp_path, *cfg, n=2, run_id="r"), factories=fakes(tmp_path, judge_down=down))
    assert more.planned == 1 and more.infra_left.selections == {"ServerFailure": 1}
    data = load_run(store)
    assert "a" not in data.selections["critic"] and list(data.left_out["critic"]) == ["a"]
    down.unlink()
    again = run_batch(tasks, config(tmp_path, *cfg, n=2, run_id="r"), factories=fakes(tmp_path, judge_down=down))
    assert again.infra_left.total == 0 and "a" in load_run(store).selections["critic"]


def test_brute_force_helpers_agree_with_the_closed_forms() -> None:
    for n, c, k in [(4, 1, 2), (5, 2, 3), (3, 3, 1)]:
        assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k))
        assert tied_pick_at_k(n, c, k) == pytest.approx(c / n)
