"""End-to-end orchestration on the session's real local Ray, with fakes for model, agent, sandbox and verifier."""

from __future__ import annotations

from pathlib import Path

import pytest
from orch_support import config, fakes, make_tasks

from agentbon.orchestrate import derive_seed, run_batch
from agentbon.orchestrate.events import EarlyStop, Infra, LauncherChosen, ServerRestart
from agentbon.store import RunStore
from agentbon.testing import FakeBackend

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_session")]

SHORT_DEADLINE = ("deadline_s=2", "sandbox.setup_timeout_s=0.5", "agent.time_limit_s=0.5", "model.timeout_s=1")
"""A 2 s deadline, with the limits it must hold shrunk to fit it (config.py refuses a deadline they do not fit)."""


def live(root: Path) -> list[Path]:
    return FakeBackend(root=root / "sandboxes").live()


def verifications(root: Path) -> list[str]:
    log = root / "verify.log"
    return log.read_text().splitlines() if log.exists() else []


def test_run_records_rollouts_verdicts_and_selections(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a", "b"])
    f = fakes(tmp_path, {"a/0": "FIX sleep:0.2", "b/2": "FIX"}, default="nope")
    result = run_batch(tasks, config(tmp_path, n=3, run_id="r"), factories=f)
    store = RunStore(result.path)
    rollouts = store.rollouts()
    assert sorted(rollouts) == ["a/0", "a/1", "a/2", "b/0", "b/1", "b/2"]
    assert all(r.status == "submitted" and r.attempt == 1 for r in rollouts.values())
    assert rollouts["b/1"].seed == derive_seed(0, "b", 1) != rollouts["b/0"].seed
    assert "+FIX" in rollouts["a/0"].patch and (result.path / "a/0/patch.diff").read_text() == rollouts["a/0"].patch
    assert store.trajectory("a/0")[1]["content"] == "FIX sleep:0.2"
    grade = store.verdicts("grade")
    assert {rid for rid, v in grade.items() if v.status == "pass"} == {"a/0", "b/2"}
    assert len(store.verdicts("evidence")) == 6
    winners = {(s.task_id, s.selector): s.winner for s in store.selections()}
    assert winners == {("a", "first"): "a/0", ("a", "oracle"): "a/0", ("b", "first"): "b/2", ("b", "oracle"): "b/2"}
    assert live(tmp_path) == []
    # Identical patches ("nope" x4) are verified once per task and role, and the verdict shared.
    assert len(verifications(tmp_path)) == 2 * 2 * 2


def test_same_command_resumes_and_raising_n_runs_only_new(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a", "b"])
    f = fakes(tmp_path, {"a/3": "FIX"}, default="nope")
    first = run_batch(tasks, config(tmp_path, n=2, run_id="r"), factories=f)
    assert first.planned == 4
    again = run_batch(tasks, config(tmp_path, n=2, run_id="r"), factories=f)
    assert (again.planned, again.already_done) == (0, 4)
    more = run_batch(tasks, config(tmp_path, n=4, run_id="r"), factories=f)
    assert (more.planned, more.already_done) == (4, 4)
    store = RunStore(first.path)
    assert store.rollout_counts() == {f"{t}/{i}": 1 for t in "ab" for i in range(4)}
    assert store.verdicts("grade")["a/3"].status == "pass"
    # Selections were redone for the raised N.
    assert {s.winner for s in store.selections() if s.task_id == "a"} == {"a/3"}


def test_missing_verdicts_are_verified_on_resume(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a"])
    f = fakes(tmp_path, {"a/0": "FIX", "a/1": "other"}, default="nope")
    result = run_batch(tasks, config(tmp_path, n=3, run_id="r"), factories=f)
    log = result.path / "events.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    # Drop a/1's verdicts, as if the driver died before recording them.
    log.write_text("".join(line for line in lines if not ('"verdict"' in line and '"a/1"' in line)))
    before = len(verifications(tmp_path))
    again = run_batch(tasks, config(tmp_path, n=3, run_id="r"), factories=f)
    assert again.planned == 0
    assert verifications(tmp_path)[before:] == ["a/1 evidence", "a/1 grade"]
    assert RunStore(result.path).verdicts("grade")["a/1"].status == "fail"


def test_infra_errors_are_retried_within_the_bound_and_recorded(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a"])
    f = fakes(tmp_path, {"a/0": "FIX"}, default="nope", fail_open={"a/0": 1, "a/1": 9})
    result = run_batch(tasks, config(tmp_path, "infra_retries=2", n=2, run_id="r"), factories=f)
    store = RunStore(result.path)
    rollouts = store.rollouts()
    assert (rollouts["a/0"].status, rollouts["a/0"].attempt) == ("submitted", 2)
    assert (rollouts["a/1"].status, rollouts["a/1"].exit_status, rollouts["a/1"].attempt) == ("infra_error", "SandboxGone", 3)
    infra = store.recorded(Infra)
    assert sorted((e.rollout_id, e.attempt, e.error) for e in infra) == [
        ("a/0", 1, "SandboxGone"), ("a/1", 1, "SandboxGone"), ("a/1", 2, "SandboxGone"), ("a/1", 3, "SandboxGone"),
    ]
    assert (result.path / "a/1/logs/rollout-attempt1.txt").read_text().count("SandboxGone") >= 1
    assert "a/1" not in store.verdicts("grade")  # an infra failure is not a candidate


def test_model_failures_are_never_retried(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a"])
    result = run_batch(tasks, config(tmp_path, n=2, run_id="r"), factories=fakes(tmp_path, {"a/0": "raise"}, default="nope"))
    store = RunStore(result.path)
    r = store.rollouts()["a/0"]
    assert (r.status, r.exit_status, r.attempt) == ("agent_error", "ValueError", 1)
    assert store.recorded(Infra) == []
    assert store.rollouts()["a/1"].status == "submitted"  # one failure never stops the batch


def test_a_dying_tmp_pather_is_an_infra_error_and_retried(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a"])
    result = run_batch(tasks, config(tmp_path, n=2, run_id="r"), factories=fakes(tmp_path, {"a/0": "crash-once FIX"}))
    store = RunStore(result.path)
    assert (store.rollouts()["a/0"].status, store.rollouts()["a/0"].attempt) == ("submitted", 2)
    assert [e.error for e in store.recorded(Infra)] == ["WorkerCrashedError"]
    assert live(tmp_path) == []  # the dead tmp_pather's sandbox was reaped on its node


def test_server_failure_restarts_the_server_then_retries(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a"])
    result = run_batch(
        tasks, config(tmp_path, "infra_retries=1", n=1, run_id="r"), factories=fakes(tmp_path, {"a/0": "server-down"})
    )
    store = RunStore(result.path)
    assert (store.rollouts()["a/0"].status, store.rollouts()["a/0"].attempt) == ("infra_error", 2)
    assert (tmp_path / "restarts.log").read_text().count("restart") == 1  # once per burst
    assert [e["type"] for e in store.events() if e["type"] == "server_restart"] == ["server_restart"]


def test_a_server_that_does_not_come_back_is_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    import dataclasses
    import functools

    from agentbon.testing import FakeService

    tasks = make_tasks(tmp_path, ["a", "b"])
    f = dataclasses.replace(
        fakes(tmp_path, {"a/0": "server-down"}, default="nope"),
        server=functools.partial(FakeService, restarts=str(tmp_path / "restarts.log"), restart_fails="server"),
    )
    result = run_batch(tasks, config(tmp_path, "infra_retries=0", n=1, run_id="r"), factories=f)
    store = RunStore(result.path)
    assert store.rollouts()["a/0"].status == "infra_error" and store.rollouts()["b/0"].status == "submitted"
    [restart] = store.recorded(ServerRestart)
    assert restart.error.startswith("ServerFailure: fake did not answer")
    assert result.infra_left.total == 1  # the CLI exits 3: run it again once the server is back


def test_an_unexpected_exception_still_removes_the_runs_sandboxes(tmp_path: Path) -> None:
    import dataclasses
    import functools

    from agentbon.testing import FakeService

    tasks = make_tasks(tmp_path, ["a", "b", "c"])
    f = dataclasses.replace(
        fakes(tmp_path, {"a/0": "server-down"}, default="nope sleep:5"),
        server=functools.partial(FakeService, restart_fails="bug"),  # a bug, not a fault the taxonomy knows
    )
    with pytest.raises(RuntimeError, match="bug in restart"):
        run_batch(tasks, config(tmp_path, "infra_retries=0", n=2, run_id="r"), factories=f)
    assert live(tmp_path) == []  # the rollouts still sleeping had their sandboxes removed before Ray went


def test_deadline_stops_a_rollout_that_loops_in_python(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a"])
    result = run_batch(
        tasks, config(tmp_path, "infra_retries=0", *SHORT_DEADLINE, n=2, run_id="r"), factories=fakes(tmp_path, {"a/0": "hang"})
    )
    r = RunStore(result.path).rollouts()["a/0"]
    # "hang" never ends by itself: the run finishing at all is the deadline's doing, on a machine of any load
    # (a bound on its wall time failed on a loaded machine: 66 s for the run).
    assert (r.status, r.exit_status) == ("infra_error", "RolloutDeadline")
    assert live(tmp_path) == []


def test_deadline_kills_a_rollout_blocked_in_c(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentbon.orchestrate import supervise

    monkeypatch.setattr(supervise, "GRACE_S", 1.0)
    tasks = make_tasks(tmp_path, ["a"])
    result = run_batch(
        tasks, config(tmp_path, "infra_retries=0", *SHORT_DEADLINE, n=1, run_id="r"), factories=fakes(tmp_path, {"a/0": "block"})
    )
    store = RunStore(result.path)
    r = store.rollouts()["a/0"]
    assert (r.status, r.exit_status) == ("infra_error", "RolloutDeadline")
    assert r.timings.wall_s < 600  # killed, not woken: "block" sleeps an hour in one C call
    assert live(tmp_path) == []  # the killed worker's sandbox was reaped


def test_early_stop_cancels_a_migration_tasks_other_rollouts(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["m"], migration=True) + make_tasks(tmp_path, ["b"])
    # The migration's other rollouts wait on a gate that never opens: only the early stop ends them (sleeping ones
    # could all finish before m/0 is graded on a loaded machine, leaving nothing to cancel).
    gate = tmp_path / "never"
    f = fakes(tmp_path, {"m/0": "FIX", **{f"b/{i}": "nope" for i in range(6)}}, default=f"nope hold:{gate}")
    result = run_batch(tasks, config(tmp_path, "early_stop_fixed=1", n=6, run_id="r"), factories=f)
    store = RunStore(result.path)
    stop = store.recorded(EarlyStop)
    assert [e.task_id for e in stop] == ["m"]
    not_run = set(stop[0].skipped) | set(stop[0].cancelled)
    assert not_run and not_run.isdisjoint(store.rollouts())  # cancelled rollouts are not recorded
    assert result.saved.rollouts_not_run == len(not_run) and result.saved.sandbox_s >= 0
    assert len([r for r in store.rollouts() if r.startswith("b/")]) == 6  # the other task is untouched
    assert live(tmp_path) == []
    # Resume: the task already passed, so its missing rollouts are skipped again, not run.
    again = run_batch(tasks, config(tmp_path, "early_stop_fixed=1", n=6, run_id="r"), factories=f)
    assert again.planned == 0 and set(again.saved.skipped) == not_run


def test_the_run_records_and_shows_which_server_it_chose_and_why(tmp_path: Path) -> None:
    """The model service decides (a CPU given as /proc/cpuinfo text); the run applies, shows and records it."""
    import functools

    from agentbon.models.choice import decide
    from agentbon.report.summary import serving_stats
    from agentbon.testing import FakeService
    from tests.models.test_choice import EPYC_AVX2, facts

    class ChoosingService(FakeService):
        def choose(self, *, log):
            log("measuring both servers once")  # what a calibration says while it runs
            return decide(self.config.launcher, facts(EPYC_AVX2))

    shown: list[str] = []
    f = fakes(tmp_path)
    f = type(f)(**{**f.__dict__, "server": functools.partial(ChoosingService, restarts=None)})
    result = run_batch(
        make_tasks(tmp_path, ["a"]), config(tmp_path, n=1, run_id="chosen"), factories=f,
        emit=lambda event: shown.append(event.kind),
    )
    store = RunStore(result.path)
    assert store.config_data()["model"]["launcher"] == "llama-cpp"  # the store names what ran
    (event,) = store.recorded(LauncherChosen)
    assert event.launcher == "llama-cpp" and "AMD EPYC, 2 cores, avx2" in event.reason
    assert serving_stats(store).launcher_reason == event.reason
    assert shown.index("note") < shown.index("launcher") < shown.index("plan")
