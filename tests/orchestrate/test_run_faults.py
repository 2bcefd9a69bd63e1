"""The failure taxonomy through the real driver on the session's local Ray (fakes for model, agent, sandbox,
verifier): infra outcomes are retried, left out of n and run again on resume; model outcomes are counted once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from orch_support import config, fakes, make_tasks

from agentbon.errors import ConfigError
from agentbon.orchestrate import run_batch
from agentbon.orchestrate.events import Aborted, EarlyStop, End, Infra, Warning
from agentbon.store import RunStore

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_session")]


@pytest.mark.parametrize(("directive", "kind"), [
    ("docker-api-error", "APIError"), ("model-404", "EndpointMisconfigured"), ("disk-full", "OSError"),
])
def test_infra_failures_are_retried_left_out_and_run_again_on_resume(tmp_path: Path, directive: str, kind: str) -> None:
    tasks = make_tasks(tmp_path, ["a"])
    result = run_batch(tasks, config(tmp_path, "infra_retries=1", n=2, run_id="r"),
                       factories=fakes(tmp_path, {"a/0": directive}, default="nope"))
    store = RunStore(result.path)
    r = store.rollouts()["a/0"]
    assert (r.status, r.exit_status, r.attempt) == ("infra_error", kind, 2)
    assert [(e.attempt, e.retry) for e in store.recorded(Infra)] == [(1, True), (2, False)]
    assert "a/0" not in store.verdicts("grade")  # not a candidate: never counted in n
    assert result.infra_left.rollouts == {kind: 1} and result.infra_left.total == 1
    again = run_batch(tasks, config(tmp_path, "infra_retries=1", n=2, run_id="r"),
                      factories=fakes(tmp_path, {"a/0": "FIX"}, default="nope"))
    assert (again.planned, again.infra_left.total) == (1, 0)
    assert store.rollouts()["a/0"].status == "submitted" and store.verdicts("grade")["a/0"].status == "pass"


def test_a_conversation_too_long_is_the_models_outcome_counted_once(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a"])
    result = run_batch(tasks, config(tmp_path, n=1, run_id="r"), factories=fakes(tmp_path, {"a/0": "too-long"}))
    store = RunStore(result.path)
    r = store.rollouts()["a/0"]
    assert (r.status, r.attempt) == ("token_limit", 1)
    assert store.recorded(Infra) == [] and result.infra_left.total == 0
    assert store.verdicts("grade")["a/0"].status == "fail"


def test_a_verification_that_cannot_run_is_left_as_infra_and_verified_on_resume(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a"])
    result = run_batch(tasks, config(tmp_path, "infra_retries=1", n=2, run_id="r"),
                       factories=fakes(tmp_path, {"a/0": "VERIFY-DOWN"}, default="nope"))
    store = RunStore(result.path)
    assert store.rollouts()["a/0"].status == "submitted"
    assert {role: store.verdicts(role)["a/0"].status for role in ("evidence", "grade")} == {
        "evidence": "infra_error", "grade": "infra_error"}
    assert result.infra_left.verdicts == {"EngineUnavailable": 2} and result.infra_left.rollouts == {}


def test_resume_refuses_tasks_redefined_since_the_run_started(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a", "b"])
    run_batch(tasks, config(tmp_path, n=1, run_id="r"), factories=fakes(tmp_path))
    changed = [tasks[0].model_copy(update={"problem_statement": "something else",
                                           "grade": tasks[0].grade.model_copy(update={"command": "false"})}), tasks[1]]
    with pytest.raises(ConfigError) as err:
        run_batch(changed, config(tmp_path, n=2, run_id="r"), factories=fakes(tmp_path))
    assert "a: problem_statement, grade" in str(err.value) and "--accept-task-changes" in str(err.value)
    store = RunStore(tmp_path / "runs" / "r")
    assert sum(store.rollout_counts().values()) == 2  # nothing ran
    more = run_batch(changed, config(tmp_path, "accept_task_changes=true", n=2, run_id="r"), factories=fakes(tmp_path))
    assert more.planned == 2
    assert {t.task_id: t.problem_statement for t in store.tasks()}["a"] == "something else"
    assert [e.message for e in store.recorded(Warning)] == ["resumed with 1 redefined task(s): a"]


def test_a_resume_without_some_tasks_reports_the_tasks_it_ran_and_keeps_the_others(tmp_path: Path) -> None:
    from agentbon.report.data import load_run

    tasks = make_tasks(tmp_path, ["a", "b", "c"])
    run_batch(tasks, config(tmp_path, n=1, run_id="r"), factories=fakes(tmp_path))
    fewer = run_batch(tasks[:2], config(tmp_path, n=1, run_id="r"), factories=fakes(tmp_path))
    store = RunStore(fewer.path)
    assert fewer.planned == 0 and load_run(store).task_ids == ["a", "b"]
    assert [e.message for e in store.recorded(Warning)] == [
        "resumed without 1 task(s) of this run, left out of its report (their records stay; a resume with them "
        "brings them back): c"
    ]
    again = run_batch(tasks, config(tmp_path, n=1, run_id="r"), factories=fakes(tmp_path))
    assert again.planned == 0 and load_run(store).task_ids == ["a", "b", "c"]


def test_a_resume_that_changes_early_stop_or_verification_is_refused_before_anything_runs(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["m"], migration=True)
    run_batch(tasks, config(tmp_path, n=1, run_id="r"), factories=fakes(tmp_path))
    for setting, named in (("early_stop=false", "early_stop: True -> False"),
                           ("verify.timeout_s=5", "verify.timeout_s: 300.0 -> 5.0")):  # fmt: skip
        with pytest.raises(ConfigError, match=named):
            run_batch(tasks, config(tmp_path, setting, n=2, run_id="r"), factories=fakes(tmp_path))
    assert sum(RunStore(tmp_path / "runs" / "r").rollout_counts().values()) == 1  # nothing ran


def test_early_stop_keeps_the_fixed_part_of_every_task(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["m"], migration=True)
    # Past the fixed part, every rollout waits on a gate that never opens: only the early stop ends them (a rollout
    # that merely slept could finish before the fixed part is graded on a loaded machine, leaving nothing to stop).
    gate = tmp_path / "never"
    f = fakes(tmp_path, {"m/0": "FIX", "m/1": "nope", "m/2": "nope"}, default=f"nope hold:{gate}")
    result = run_batch(tasks, config(tmp_path, "early_stop_fixed=3", "concurrency=2", n=8, run_id="r"), factories=f)
    store = RunStore(result.path)
    stop = store.recorded(EarlyStop)
    assert [(e.task_id, e.fixed) for e in stop] == [("m", 3)]
    recorded = set(store.rollouts())
    assert {"m/0", "m/1", "m/2"} <= recorded  # the fixed part ran to the end
    not_run = set(stop[0].skipped) | set(stop[0].cancelled)
    assert not_run and not_run.isdisjoint(recorded) and not_run.isdisjoint({"m/0", "m/1", "m/2"})
    assert recorded | not_run == {f"m/{i}" for i in range(8)}


def test_a_server_that_stays_down_stops_the_run_instead_of_burning_the_batch(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a", "b", "c"])
    cfg = config(tmp_path, "infra_retries=0", "infra_abort_after=3", "concurrency=1", n=4, run_id="r")
    result = run_batch(tasks, cfg, factories=fakes(tmp_path, default="model-404"))
    store = RunStore(result.path)
    assert result.aborted and "units in a row failed on infrastructure" in result.aborted
    assert len(store.recorded(Aborted)) == 1 and store.recorded(End)[-1].aborted == result.aborted
    assert len(store.rollouts()) < 12  # the rest were never started
    again = run_batch(tasks, config(tmp_path, "infra_retries=0", n=4, run_id="r"), factories=fakes(tmp_path))
    assert again.aborted is None and again.infra_left.total == 0
    assert sum(store.rollout_counts().values()) == 12


def test_infra_retries_wait_for_their_back_off(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a"])
    f = fakes(tmp_path, {"a/0": "FIX"}, fail_open={"a/0": 2})
    result = run_batch(tasks, config(tmp_path, "infra_retries=2", "infra_backoff_s=0.5", n=1, run_id="r"), factories=f)
    store = RunStore(result.path)
    infra = store.recorded(Infra)
    assert store.rollouts()["a/0"].attempt == 3 and [e.attempt for e in infra] == [1, 2]
    # The second attempt started at least 0.5 s after the first failed; the third 1 s after the second. When each
    # failure was recorded is the log line's time stamp, not a field of the event: read from the raw log.
    failed_at = [e["ts"] for e in store.events(Infra.kind)]
    starts = [r["record"]["timings"]["started_at"] for r in store.events("rollout")]
    assert failed_at[1] - failed_at[0] >= 0.5 and starts[-1] - failed_at[1] >= 1.0


def test_a_rollout_that_took_its_whole_deadline_is_verified_on_resume(tmp_path: Path) -> None:
    """Verification has its own budget, whatever the rollout took. The store is as an earlier driver left it: the
    rollout's wall time at its deadline and both verdicts ``infra_error`` for want of time (out of n, exit 3)."""
    tasks = make_tasks(tmp_path, ["a"])
    cfg = config(tmp_path, n=1, run_id="r")
    f = fakes(tmp_path, {"a/0": "FIX"})
    log = run_batch(tasks, cfg, factories=f).path / "events.jsonl"
    events = [json.loads(line) for line in log.read_text().splitlines()]
    for event in events:
        if event["type"] == "rollout":
            event["record"]["timings"]["wall_s"] = cfg.deadline_s
        if event["type"] == "verdict":
            event["record"].update(status="infra_error", reason="RolloutDeadline: no time left to verify")
    log.write_text("".join(json.dumps(event) + "\n" for event in events))
    again = run_batch(tasks, cfg, factories=f)
    assert again.infra_left.total == 0
    store = RunStore(again.path)
    assert {role: store.verdicts(role)["a/0"].status for role in ("evidence", "grade")} == {
        "evidence": "pass", "grade": "pass"}


def test_a_verification_past_its_own_budget_is_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its budget something outside the tests hung (infrastructure): another attempt has the whole budget
    again. The budget is cut to 0.5 s and the fake verifier takes 2 s, so each attempt runs past it."""
    import dataclasses
    import functools

    from agentbon.testing import FakeVerifier

    monkeypatch.setattr("agentbon.orchestrate.verify_stage.budget_s", lambda verify, setup_s: 0.5)
    tasks = make_tasks(tmp_path, ["a"], migration=True)  # evidence is the grade: one verification per attempt
    slow = dataclasses.replace(fakes(tmp_path, {"a/0": "FIX"}), verifier=functools.partial(FakeVerifier, delay_s=2.0))
    result = run_batch(tasks, config(tmp_path, "infra_retries=1", "infra_backoff_s=0", n=1, run_id="r"), factories=slow)
    infra = [(e.unit, e.error, e.attempt, e.retry) for e in RunStore(result.path).recorded(Infra)]
    assert infra == [("verify", "RolloutDeadline", 1, True), ("verify", "RolloutDeadline", 2, False)]
    assert result.infra_left.verdicts == {"RolloutDeadline": 2}
