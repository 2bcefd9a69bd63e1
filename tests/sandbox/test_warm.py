"""Warm sandboxes: the next container starts while the current one runs, is clean, and never outlives the run."""

from __future__ import annotations

import uuid

import pytest

pytestmark = pytest.mark.docker


@pytest.fixture
def warm_run(engine, sandbox_config, tiny_task):
    """A backend keeping sandboxes warm for a run of its own; the run's reap at the end, as the driver does."""
    from agentbon.sandbox import DockerBackend

    labels = {"run_id": f"warmtest-{uuid.uuid4().hex[:8]}"}
    backend = DockerBackend(sandbox_config, engine)
    backend.keep_warm()
    yield backend, labels
    backend.reap(labels)
    assert containers(engine, labels) == []


def containers(engine, labels):
    from agentbon.sandbox.common import label_filters

    return engine.containers.list(all=True, filters={"label": label_filters(labels)})


def test_the_next_sandbox_is_started_while_this_one_runs_and_taken_warm(warm_run, tiny_task, engine):
    backend, labels = warm_run
    first = backend.open(tiny_task, {**labels, "rollout_id": "tiny/0"})
    assert not first.warm
    first.close()  # waits for the warm start the opening began
    assert backend.remover.flush(60.0)  # the closed one is removed in the background
    waiting = containers(engine, labels)
    assert len(waiting) == 1 and waiting[0].labels["agentbon.warm"] == "1"
    assert "agentbon.rollout_id" not in waiting[0].labels  # it belongs to no unit yet
    second = backend.open(tiny_task, {**labels, "rollout_id": "tiny/1"})
    assert second.warm and second.use().warm
    assert second.id == waiting[0].id[:12]
    assert second.use().executor == "resident"  # connected before it was needed
    assert second.exec("echo warm").output == "warm\n"
    second.close()
    assert backend.pool.started == 2 and backend.pool.taken == 1


def test_exploit_nothing_passes_from_one_rollout_to_the_warm_next(warm_run, tiny_task):
    backend, labels = warm_run
    first = backend.open(tiny_task, {**labels, "rollout_id": "tiny/0"})
    first.write_file("planted.py", "print('left behind')\n")
    first.exec("nohup sleep 600 >/dev/null 2>&1 & echo started > /tmp/marker")
    first.close()
    second = backend.open(tiny_task, {**labels, "rollout_id": "tiny/1"})
    assert second.warm
    assert second.diff() == ""
    assert second.exec("ls /tmp/marker planted.py 2>&1; ps -eo args | grep -c '^sleep 600'").output.split()[-1] == "0"
    second.close()


def test_a_warm_sandbox_removed_meanwhile_is_replaced_by_a_fresh_start(warm_run, tiny_task, engine):
    backend, labels = warm_run
    backend.open(tiny_task, {**labels, "rollout_id": "tiny/0"}).close()
    backend.reap(labels)  # what a reap (or an engine restart) does to the waiting one
    again = backend.open(tiny_task, {**labels, "rollout_id": "tiny/1"})
    assert not again.warm and again.exec("echo fresh").output == "fresh\n"
    again.close()


def test_a_new_run_removes_the_last_runs_warm_sandboxes(warm_run, tiny_task, engine):
    backend, labels = warm_run
    backend.open(tiny_task, {**labels, "rollout_id": "tiny/0"}).close()
    assert backend.remover.flush(60.0)
    assert len(containers(engine, labels)) == 1
    other = {"run_id": f"{labels['run_id']}-next"}
    try:
        backend.open(tiny_task, {**other, "rollout_id": "tiny/0"}).close()
        assert backend.remover.flush(60.0)
        assert containers(engine, labels) == []
        assert len(containers(engine, other)) == 1
    finally:
        backend.reap(other)


def test_without_keep_warm_nothing_is_left_waiting(engine, sandbox_config, tiny_task, run_labels):
    from agentbon.sandbox import DockerBackend

    backend = DockerBackend(sandbox_config, engine)  # as the authoring commands use it: no run reap follows
    labels = {**run_labels, "purpose": "unwarmed"}
    backend.open(tiny_task, {**labels, "rollout_id": "tiny/0"}).close()
    assert containers(engine, labels) == []


def test_a_closed_sandbox_is_removed_off_the_callers_path_and_counted(warm_run, tiny_task, engine):
    backend, labels = warm_run
    sandbox = backend.open(tiny_task, {**labels, "rollout_id": "tiny/0"})
    calls = sandbox.use().engine_calls
    sandbox.close()
    assert sandbox.use().engine_calls == calls + 1  # the removal, counted when it was handed over
    assert backend.remover.flush(60.0)
    left = [c.labels.get("agentbon.rollout_id") for c in containers(engine, labels)]
    assert left == [None]  # only the warm one for the next unit; the closed one is gone


def test_a_container_reaped_before_its_queued_removal_is_no_error(warm_run, tiny_task, engine, caplog):
    backend, labels = warm_run
    sandbox = backend.open(tiny_task, {**labels, "rollout_id": "tiny/0"})
    backend.reap(labels)  # the run's reap got there first
    sandbox.close()
    assert backend.remover.flush(60.0)
    assert "could not remove" not in caplog.text
