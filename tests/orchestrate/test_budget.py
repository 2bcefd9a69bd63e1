"""The batch budget: the pure allocator, its replay on recorded outcomes, and a real run on the session's Ray with
fakes (first allotments, the rest to the unsolved tasks, every decision logged, curves from the first part)."""

from __future__ import annotations

from pathlib import Path

import pytest
from orch_support import config, fakes, make_tasks

from agentbon.errors import ConfigError
from agentbon.orchestrate import run_batch
from agentbon.orchestrate.budget import Allocator, TaskState, replay
from agentbon.orchestrate.driver import budget_states
from agentbon.orchestrate.events import Allocated
from agentbon.orchestrate.plan import make_spec
from agentbon.orchestrate.state import TaskBook
from agentbon.report import build_summary
from agentbon.store import RunStore
from agentbon.types import Rollout, Verdict


def state(task_id: str, allotted: int, verified: int, passes: int = 0, finished: int | None = None, **kw) -> TaskState:
    return TaskState(task_id, allotted=allotted, verified=verified, passes=passes,
                     finished=verified if finished is None else finished, **kw)  # fmt: skip


def test_a_budget_must_cover_every_tasks_first_allotment():
    assert Allocator(total=7, n=8, first=2).problem(4) == (
        "run.budget (7 rollouts) is less than the first allotment: 4 tasks x 2 (run.budget_first) = 8"
    )
    assert Allocator(total=8, n=8, first=2).problem(4) is None


def test_only_unsolved_tasks_with_their_first_allotment_verified_get_more_up_to_n():
    alloc = Allocator(total=100, n=4, first=2)
    states = {
        "solved": state("solved", 2, 2, passes=1),
        "waiting": state("waiting", 2, 1, finished=1),  # its first allotment is not verified yet
        "full": state("full", 4, 4),
        "open": state("open", 2, 2),
    }
    picked = alloc.next(states, 5)
    assert [(d.task_id, d.index) for d in picked] == [("open", 2), ("open", 3)]  # then it is at n
    assert "no verified pass in 2 verified rollout(s)" in picked[0].reason


def test_a_pass_ends_a_task_only_where_its_evidence_is_its_grade_elsewhere_it_waits_at_the_back():
    alloc = Allocator(total=100, n=4, first=2)
    states = {
        "migration": state("migration", 2, 2, passes=1),  # a verified pass solves it
        "one-pass": state("one-pass", 2, 2, passes=1, evidence_is_grade=False),
        "two-passes": state("two-passes", 2, 2, passes=2, evidence_is_grade=False),
        "open": state("open", 2, 2, evidence_is_grade=False),
    }
    picked = [(d.task_id, d.index) for d in alloc.next(states, 10)]
    # The task without a pass first (to n), then the fewest passes, then the rest; the migration never.
    assert picked == [("open", 2), ("open", 3), ("one-pass", 2), ("one-pass", 3), ("two-passes", 2), ("two-passes", 3)]
    decisions = alloc.next({"p": state("p", 2, 2, passes=1, evidence_is_grade=False)}, 1)
    assert decisions[0].reason.startswith("1 verified pass(es) in 2, but its evidence is not its grade")


def test_the_likelier_task_first_and_rollouts_in_flight_count_against_it():
    alloc = Allocator(total=100, n=16, first=2)
    close = state("close", 2, 2, progress=0.9)
    far = state("far", 2, 2, progress=0.1)
    picked = alloc.next({"close": close, "far": far}, 2)
    assert [d.task_id for d in picked] == ["close", "far"]  # equal estimates: the closer one; then in-flight
    assert picked[1].estimate >= picked[0].estimate * (1 - picked[0].estimate) - 1e-9
    assert alloc.next({"x": state("x", 3, 3)}, 10)[0].estimate > alloc.next({"y": state("y", 9, 9)}, 1)[0].estimate


def test_the_budget_and_the_token_budget_stop_the_giving():
    assert len(Allocator(total=5, n=16, first=2).next({"a": state("a", 2, 2)}, 10)) == 3
    tokens = Allocator(total=100, n=16, first=2, tokens=1000)
    # 900 tokens over 2 rollouts: one more (450 expected) fits under 1000 only while none is in flight.
    assert len(tokens.next({"a": state("a", 2, 2, tokens=900)}, 10)) == 1
    assert tokens.next({"a": state("a", 2, 2, tokens=1000)}, 10) == []


def test_replay_spends_the_rest_on_tasks_without_a_pass():
    outcomes = {
        "easy": [True, False, False, False, False, False, False, False],
        "late": [False, False, False, False, False, True, False, False],
        "never": [False] * 8,
    }
    verified = {t: [True] * 8 for t in outcomes}
    given, decisions = replay(outcomes, verified, Allocator(total=14, n=8, first=2))
    assert given == {"easy": 2, "late": 6, "never": 6}
    assert sum(given.values()) == 14 and len(decisions) == 8
    # A uniform split of 14 (4 each) solves only "easy": "late" passes at its sixth rollout.
    assert sum(any(o[:4]) for o in outcomes.values()) == 1


def test_replay_gives_a_task_whose_evidence_is_not_its_grade_more_once_the_others_are_spent():
    outcomes = {"false-pass": [True, False, False, True], "never": [False] * 4}
    verified = {t: [True] * 4 for t in outcomes}
    stops, _ = replay(outcomes, verified, Allocator(total=8, n=4, first=2))
    assert stops == {"false-pass": 2, "never": 4}  # by default a pass ends the task
    given, decisions = replay(outcomes, verified, Allocator(total=8, n=4, first=2), {"false-pass": False})
    assert given == {"false-pass": 4, "never": 4}
    assert [d.task_id for d in decisions] == ["never", "never", "false-pass", "false-pass"]


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
def test_task_states_are_recomputed_only_for_tasks_whose_revision_moved(tmp_path: Path) -> None:
    books = {t.task_id: TaskBook(t) for t in make_tasks(tmp_path, ["a", "b"])}
    a, b = "a", "b"
    done = Rollout(run_id="r", task_id=a, index=0, status="submitted", patch="x")
    books[a].finished[done.rollout_id] = done
    books[a].revision += 1
    evidence: dict[str, Verdict] = {}
    cache: dict = {}
    first = budget_states(books, evidence, cache)
    assert (first[a].finished, first[a].verified, first[b].finished) == (1, 0, 0)
    evidence[done.rollout_id] = Verdict(run_id="r", task_id=a, rollout_id=done.rollout_id, role="evidence",
                                        status="pass")  # fmt: skip
    assert budget_states(books, evidence, cache)[a].passes == 0  # no revision: the cached state stands
    books[a].revision += 1  # as VerifyStage.record does with the verdict
    books[a].queued.append(make_spec(config(tmp_path), "r", a, 1))  # given out: read afresh, no revision needed
    again = budget_states(books, evidence, cache)
    assert (again[a].verified, again[a].passes, again[a].allotted) == (1, 1, 2)
    books[b].stopped = True
    assert list(budget_states(books, evidence, cache)) == [a]


def test_a_run_under_a_budget_spends_it_on_the_unsolved_and_reports_it(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a", "b", "c"])
    f = fakes(tmp_path, {"a/0": "FIX", "b/5": "FIX"}, default="nope")
    cfg = config(tmp_path, "budget=14", "budget_first=2", n=8, run_id="r")
    result = run_batch(tasks, cfg, factories=f)
    store = RunStore(result.path)
    per_task = {t: sorted(r.index for r in store.rollouts().values() if r.task_id == t) for t in "abc"}
    assert per_task["a"] == [0, 1]  # solved by its first allotment: nothing more
    assert len(per_task["b"]) + len(per_task["c"]) == 12 and sum(map(len, per_task.values())) == 14
    assert per_task["b"] == list(range(len(per_task["b"])))  # indices given in order
    allocated = store.recorded(Allocated)
    assert len(allocated) == 8 and {e.task_id for e in allocated} == {"b", "c"}
    assert [e.left for e in allocated] == list(range(7, -1, -1)) and all(e.reason for e in allocated)
    s = build_summary(store)
    b = s["budget"]
    assert (b["rollouts"], b["spent"], b["first"], b["decisions"]) == (14, 14, 2, 8)
    assert (b["uniform_share"], b["uniform_solved"]) == (4, 1)
    assert b["solved"] == (2 if 5 in per_task["b"] else 1) and b["solved_first"] == 1
    assert all(row["curve_n"] == 2 for row in s["per_task"])  # the curves use the first allotments only
    again = run_batch(tasks, cfg, factories=f)  # resumed: the budget is spent, nothing more runs
    assert again.planned == 0 and len(RunStore(result.path).recorded(Allocated)) == 8


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
def test_a_run_gives_the_rest_to_passed_tasks_whose_evidence_is_not_their_grade(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["bug", "never"]) + make_tasks(tmp_path, ["mig"], migration=True)
    f = fakes(tmp_path, {"bug/0": "FIX", "mig/0": "FIX"}, default="nope")
    result = run_batch(tasks, config(tmp_path, "budget=12", "budget_first=2", n=4, run_id="r"), factories=f)
    store = RunStore(result.path)
    per_task = {t.task_id: sorted(r.index for r in store.rollouts().values() if r.task_id == t.task_id) for t in tasks}
    assert per_task == {"bug": [0, 1, 2, 3], "never": [0, 1, 2, 3], "mig": [0, 1]}  # 10 of 12: nothing else can run
    reasons = {e.task_id: e.reason for e in store.recorded(Allocated)}
    assert reasons["bug"].startswith("1 verified pass(es)") and reasons["never"].startswith("no verified pass")


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
def test_a_budget_below_the_first_allotments_stops_before_anything_is_recorded(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a", "b", "c"])
    with pytest.raises(ConfigError, match=r"run.budget \(5 rollouts\) is less than the first allotment"):
        run_batch(tasks, config(tmp_path, "budget=5", "budget_first=2", n=8, run_id="r"), factories=fakes(tmp_path))
    assert not (tmp_path / "runs" / "r").exists()
