"""The run store: append-only events, torn tails, the driver lock, duplicate counting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentbon.errors import ConfigError
from agentbon.orchestrate.events import Infra
from agentbon.store import RunStore
from agentbon.types import Rollout


def test_torn_last_line_is_ignored_then_cut_off(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.save_rollout(Rollout(run_id="run", task_id="a", index=0, status="submitted"))
    with open(store.path / "events.jsonl", "a") as f:
        f.write('{"type": "rollout", "record": {"task_id": "a", "ind')  # the driver died mid-write
    assert list(store.rollouts()) == ["a/0"]
    store.save_rollout(Rollout(run_id="run", task_id="a", index=1, status="submitted"))
    assert list(store.rollouts()) == ["a/0", "a/1"]
    assert all(line.endswith("}") for line in (store.path / "events.jsonl").read_text().splitlines())


def test_rollout_counts_ignore_infra_attempts(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.save_rollout(Rollout(run_id="run", task_id="a", index=0, status="infra_error"))
    store.save_rollout(Rollout(run_id="run", task_id="a", index=0, status="submitted", attempt=2))
    store.save_rollout(Rollout(run_id="run", task_id="a", index=1, status="submitted"))
    store.save_rollout(Rollout(run_id="run", task_id="a", index=1, status="submitted"))
    assert store.rollout_counts() == {"a/0": 1, "a/1": 2}
    assert store.rollouts()["a/0"].attempt == 2


def test_logs_and_recorded_events(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.append("infra", unit="rollout", task_id="a", rollout_id="a/0", error="SandboxGone", message="gone")
    store.append("start", n=2)
    assert [e.error for e in store.recorded(Infra)] == ["SandboxGone"]
    assert store.save_log("a/0", "rollout-attempt1.txt", "tb").read_text() == "tb"


def test_a_second_driver_on_the_same_run_is_refused(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    with store.lock():
        with pytest.raises(ConfigError, match="in use by another agentbon process"):
            with RunStore(tmp_path / "run").lock():
                pass
    # A holder killed with -9 leaves no stale lock behind.
    code = f"import os; from agentbon.store import RunStore\nwith RunStore({str(store.path)!r}).lock(): os.kill(os.getpid(), 9)"
    subprocess.run([sys.executable, "-c", code])
    with store.lock():
        pass


def test_standing_failures_are_the_latest_attempts_of_each_task_and_selector(tmp_path: Path) -> None:
    from agentbon.types import Selection

    store = RunStore(tmp_path / "run")
    select = lambda task: Selection(run_id="run", task_id=task, selector="critic", winner=f"{task}/0")  # noqa: E731
    store.save_selection(select("a"))
    store.append("selector_error", task_id="a", selector="critic", error="ServerFailure: down", infra=True)
    store.append("selector_error", task_id="b", selector="critic", error="ServerFailure: down", infra=True)
    store.save_selection(select("b"))  # b was selected again since
    store.append("selector_error", task_id="c", selector="critic", error="ContextLengthExceeded: x", infra=False)
    store.append("prepare_failed", task_id="a", error="TaskError", message="gone", attempts=3, rollouts=2)
    store.append("prepare_failed", task_id="b", error="ImageBuildError", message="no disk", attempts=3, rollouts=2)
    store.save_rollout(Rollout(run_id="run", task_id="b", index=0, status="submitted"))  # b prepared on a resume
    with open(store.path / "events.jsonl", "a") as f:
        f.write('{"type": "selector_error", "task_id": "d", "selector": "critic", "er')  # torn: never read
    assert list(store.selector_failures()) == [("a", "critic")]
    assert list(store.prepare_failures()) == ["a"]
    assert [e["type"] for e in store.events("prepare_failed", "rollout")] == ["prepare_failed", "prepare_failed",
                                                                             "rollout"]  # fmt: skip
    assert len(list(store.events())) == 8


def test_recorded_reads_the_events_as_their_classes_leniently_for_other_versions(tmp_path: Path) -> None:
    from agentbon.orchestrate.events import EarlyStop, Infra, ModelStats, Recorder, SelectorError

    store = RunStore(tmp_path / "run")
    record = Recorder(store)
    written = Infra(unit="rollout", task_id="a", rollout_id="a/0", error="SandboxGone", message="gone", retry=True)
    record(written)
    store.append("infra", task_id="b", unit="rollout", error="Timeout", message="slow", shard=3)  # a newer key
    store.append("infra", task_id="c", error="Timeout")  # an older line without the fields now required
    store.append("early_stop", task_id="a", skipped=["a/3"])  # before ``fixed`` was logged: its default
    store.append("model_stats", launcher="vllm", gpu_s=2.5, home=7)  # named fields, and open ones kept as they came
    store.append("selector_error", task_id="a", selector="critic", error="ServerFailure: down", infra=True)

    infra = store.recorded(Infra)
    assert infra[0] == written
    assert [(e.task_id, e.error, e.retry) for e in infra] == [("a", "SandboxGone", True), ("b", "Timeout", False)]
    assert store.recorded(EarlyStop) == [EarlyStop(task_id="a", skipped=["a/3"])]
    assert store.recorded(EarlyStop)[0].fixed == 0
    [stats] = store.recorded(ModelStats)
    assert (stats.launcher, stats.gpu_s, stats.model_extra) == ("vllm", 2.5, {"home": 7})
    failure = store.selector_failures()[("a", "critic")]
    assert isinstance(failure, SelectorError) and failure.error == "ServerFailure: down"
    assert failure.error_kind == "ServerFailure"  # a line written before the kind was logged apart
