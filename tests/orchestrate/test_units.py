"""Fault classification, early-stop bookkeeping, the in-worker deadline and the progress state (no Ray)."""

from __future__ import annotations

import time
from collections import deque

import pytest
from ray import exceptions as rex

from agentbon.config import RunConfig
from agentbon.errors import RolloutDeadline, SandboxGone, ServerFailure
from agentbon.orchestrate import events as ev
from agentbon.orchestrate.cluster import sandbox_slots
from agentbon.orchestrate.deadline import Watchdog
from agentbon.orchestrate.early_stop import should_stop, stop_task
from agentbon.orchestrate.faults import RetryBudget, classify
from agentbon.orchestrate.state import TaskBook, Unit, VerdictCache
from agentbon.progress import PlainDisplay, ProgressState
from agentbon.types import RepoSource, Rollout, RolloutSpec, Task, TestSet, Verdict


def task(migration: bool = True) -> Task:
    return Task(task_id="m", problem_statement="p", repo=RepoSource(url="/x", base_commit="HEAD"),
                grade=TestSet(command="true"), evidence_is_grade=migration)


def spec(i: int) -> RolloutSpec:
    return RolloutSpec(run_id="r", task_id="m", index=i, seed=i, model="x")


def test_classify_infra_model_and_ray_failures() -> None:
    assert classify(SandboxGone("gone"), place="agent").infra
    assert classify(ServerFailure("down"), place="agent").server
    assert not classify(ValueError("bad reply"), place="agent").infra
    crashed = classify(rex.WorkerCrashedError(), place="agent")
    assert crashed.infra and crashed.kind == "WorkerCrashedError"
    assert classify(rex.NodeDiedError("n"), place="agent").infra
    assert RetryBudget(2).allows(2) and not RetryBudget(2).allows(3)


def test_early_stop_skips_queued_cancels_running_and_estimates_savings() -> None:
    book = TaskBook(task(), queued=deque([spec(3), spec(4)]))
    running = Unit("rollout", "m", spec=spec(1), started_at=100.0)
    waiting = Unit("rollout", "m", spec=spec(2))  # submitted, still queued inside Ray
    inflight = {"r1": running, "r2": waiting, "v": Unit("verify", "m", rollout=Rollout(run_id="r", task_id="m", index=0, status="submitted"))}
    v = Verdict(run_id="r", task_id="m", rollout_id="m/0", role="grade", status="pass")
    assert should_stop(book, v, RunConfig())
    event = stop_task(book, inflight, sandbox_s=[10.0, 30.0], now=104.0)
    assert event.skipped == ["m/2", "m/3", "m/4"] and event.cancelled == ["m/1"]
    assert event.est_sandbox_s_saved == pytest.approx(3 * 20.0 + 16.0)
    assert running.cancel == waiting.cancel == "early_stop" and inflight["v"].cancel is None
    assert not book.queued and book.stopped and not should_stop(book, v, RunConfig())
    assert not should_stop(TaskBook(task(migration=False)), v, RunConfig())


def test_early_stop_never_skips_or_cancels_the_fixed_part() -> None:
    book = TaskBook(task(), queued=deque([spec(1), spec(3)]), fixed=2)
    fixed = Unit("rollout", "m", spec=spec(0), started_at=100.0)
    beyond = Unit("rollout", "m", spec=spec(2), started_at=100.0)
    event = stop_task(book, {"a": fixed, "b": beyond}, sandbox_s=[10.0], now=101.0)
    assert (event.skipped, event.cancelled, event.fixed) == (["m/3"], ["m/2"], 2)
    assert [s.index for s in book.queued] == [1] and fixed.cancel is None and beyond.cancel == "early_stop"


def test_verdict_cache_shares_by_patch_but_never_infra_errors() -> None:
    cache = VerdictCache()
    a = Rollout(run_id="r", task_id="m", index=0, status="submitted", patch="+x\n")
    b = a.model_copy(update={"index": 1})
    cache.learn(a, Verdict(run_id="r", task_id="m", rollout_id="m/0", role="grade", status="fail", reason="no"))
    assert cache.lookup(b, ["grade", "evidence"]) is None
    shared = cache.lookup(b, ["grade"])
    assert shared and shared[0].rollout_id == "m/1" and "same patch as m/0" in shared[0].reason
    cache.learn(a, Verdict(run_id="r", task_id="m", rollout_id="m/0", role="evidence", status="infra_error"))
    assert cache.lookup(b, ["evidence"]) is None


def test_watchdog_interrupts_python_and_closes_the_sandbox() -> None:
    class Box:
        closed = False

        def close(self) -> None:
            self.closed = True

    box, dog = Box(), Watchdog(0.2)

    def busy_past_the_deadline() -> None:
        t0 = time.time()
        with dog:
            dog.guard(box)
            while time.time() - t0 < 5:
                time.sleep(0.01)

    with pytest.raises(RolloutDeadline):
        busy_past_the_deadline()
    assert box.closed and dog.fired  # raised by the watchdog (the loop itself never raises)


def test_watchdog_disarmed_in_time_never_fires() -> None:
    with Watchdog(0.2) as dog:
        pass
    time.sleep(0.4)
    assert not dog.fired


def test_progress_state_and_plain_lines() -> None:
    import io

    out = io.StringIO()
    display = PlainDisplay(ProgressState("r"), out=out, every_s=0)
    display(ev.PlanMade(tasks=2, n=2, planned=4, finished=0, verify=0, skipped=0))
    display(ev.UnitStarted(unit="rollout", rollout_id="m/0"))
    display(ev.Tokens(n=100))
    r = Rollout(run_id="r", task_id="m", index=0, status="submitted")
    display(ev.RolloutDone(rollout=r))
    display(ev.VerdictDone(verdict=Verdict(run_id="r", task_id="m", rollout_id="m/0", role="grade", status="pass")))
    display(ev.Infra(unit="rollout", task_id="m", rollout_id="m/1", error="SandboxGone", message="gone"))
    s = display.state
    assert (s.rollouts_done, s.verified, s.infra_errors, s.tokens, len(s.passed)) == (1, 1, 1, 100, 1)
    assert not s.running["rollout"] and s.eta_s is not None
    text = out.getvalue()
    assert "plan: 2 tasks x 2" in text and "rollout m/0: submitted" in text and "infra error on rollout m/1" in text
    assert "coverage 1/2 tasks (50%)" in text


def test_live_display_renders_bars_and_status() -> None:
    from rich.console import Console

    from agentbon.progress import LiveDisplay

    console = Console(record=True, force_terminal=True, width=160)
    display = LiveDisplay(ProgressState("run-x"), console)
    display(ev.PlanMade(tasks=1, n=2, planned=2, finished=0, verify=0, skipped=0))
    display(ev.RolloutDone(rollout=Rollout(run_id="r", task_id="m", index=0, status="submitted")))
    console.print(display.render())
    text = console.export_text()
    assert "agentbon run-x" in text and "rollouts" in text and "1/2" in text and "verification" in text
    assert "sandboxes running 0" in text and "infra errors 0" in text and "flagged" not in text


def test_progress_counts_flagged_candidates_as_they_are_graded() -> None:
    import io

    from agentbon.types import Flag

    out = io.StringIO()
    display = PlainDisplay(ProgressState("r"), out=out, every_s=0)
    display(ev.PlanMade(tasks=1, n=3, planned=3, finished=0, verify=0, skipped=0))
    forged = [Flag(kind="forged", detail="a canary passed that must fail"), Flag(kind="binary", detail="blob")]
    for i, flags in enumerate([forged, [Flag(kind="binary", detail="blob")], []]):
        verdict = Verdict(run_id="r", task_id="m", rollout_id=f"m/{i}", role="grade", status="fail", flags=flags)
        display(ev.VerdictDone(verdict=verdict))
    assert display.state.status_line().endswith("flagged 2 (binary 2, forged 1)")
    assert "verdict m/0 grade: fail [flagged: binary, forged]" in out.getvalue()
    assert "verdict m/2 grade: fail" in out.getvalue() and "m/2 grade: fail [" not in out.getvalue()


def test_resuming_with_other_sampling_settings_is_refused(tmp_path) -> None:
    from agentbon.config import load_config
    from agentbon.errors import ConfigError
    from agentbon.orchestrate.resume import check_resumable, default_run_id
    from agentbon.store import RunStore

    store = RunStore(tmp_path / "run")
    first = load_config(n=2)
    store.create(first.model_dump(mode="json"), [])
    check_resumable(store, load_config(n=8, concurrency=4))  # N and operational settings may change
    with pytest.raises(ConfigError, match="model.temperature: 0.8 -> 0.2.*to resume it, pass -c model.temperature=0.8;"):
        check_resumable(store, load_config(overrides=["model.temperature=0.2"]))
    # The hint puts every changed setting back: a run recorded with top-p resumes with its flags.
    with pytest.raises(ConfigError) as refused:
        check_resumable(store, load_config(overrides=["model.top_p=0.9", "model.top_k=5"]))
    flags = str(refused.value).split("pass ", 1)[1].split(";")[0].split()
    check_resumable(store, load_config(overrides=[f for f in flags if f != "-c"]))
    with pytest.raises(ConfigError, match="agent.step_limit: 20 -> 3.*pass -c agent.step_limit=20;"):
        check_resumable(store, load_config(overrides=["agent.step_limit=3"]))
    with pytest.raises(ConfigError, match=r"verify.pytest_plugins: \[\] -> \['asyncio'\]\): .*them; or use another --run-id"):
        check_resumable(store, load_config(overrides=["verify.pytest_plugins=[asyncio]"]))  # a list: no one-flag hint
    suite = [task()]
    assert default_run_id("suites/demo", first, suite) == default_run_id("suites/demo", load_config(n=8), suite)
    assert default_run_id("suites/demo", first, suite) != default_run_id(
        "suites/demo", load_config(overrides=["model.seed=1"]), suite
    )


def test_sandbox_slots_follow_how_the_model_serves() -> None:
    llama = {"model": {"launcher": "llama-cpp"}}
    assert sandbox_slots(RunConfig.model_validate(llama)) == 2  # llama.cpp's server answers one request at a time
    assert sandbox_slots(RunConfig.model_validate({"model": {"launcher": "vllm"}})) == 16
    assert sandbox_slots(RunConfig.model_validate({"model": {"launcher": "vllm-actors"}})) == 16
    assert sandbox_slots(RunConfig.model_validate({"model": {"endpoint": "http://h:8000/v1"}})) == 16
    assert sandbox_slots(RunConfig.model_validate({"concurrency": 3, "model": {"launcher": "vllm"}})) == 3
    with pytest.raises(ValueError):
        RunConfig(concurrency=0)
