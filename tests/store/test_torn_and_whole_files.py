"""A driver killed mid-write leaves nothing half-written that a later command trips on: every JSONL of a run reads
past a torn last line (and an append cuts it off first), and every file agentbon rewrites is replaced whole, through
a temporary name in the same folder and a rename (never written in place)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from agentbon.cli import app
from agentbon.store import RunStore
from agentbon.types import RepoSource, Rollout, Task, TestSet, Verdict
from tests.report.synth import make_run


def task(task_id: str) -> Task:
    return Task(task_id=task_id, problem_statement="fix it", repo=RepoSource(url="/x", base_commit="HEAD"),
                grade=TestSet(command="true"))  # fmt: skip


def tear(path: Path) -> None:
    """Append half a line, as a writer killed mid-append leaves it."""
    with open(path, "a") as f:
        f.write('{"task_id": "half", "problem_statement": "fi')


def test_a_torn_last_line_of_tasks_jsonl_is_ignored_then_cut_off(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.create({"n": 1}, [task("a")])
    tear(store.path / "tasks.jsonl")
    assert [t.task_id for t in RunStore(store.path).definitions()] == ["a"]
    store.create({"n": 1}, [task("a"), task("b")])  # the resume that appends a new task
    assert [t.task_id for t in store.tasks()] == ["a", "b"]
    lines = (store.path / "tasks.jsonl").read_text().splitlines()
    assert [json.loads(line)["task_id"] for line in lines] == ["a", "b"]


def test_a_torn_last_line_of_a_trajectory_is_ignored(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.save_rollout(Rollout(run_id="run", task_id="a", index=0, status="submitted"), [{"role": "user", "content": "x"}])
    tear(store.path / "a" / "0" / "trajectory.jsonl")
    assert store.trajectory("a/0") == [{"role": "user", "content": "x"}]


def test_report_and_export_read_a_run_whose_tasks_jsonl_is_torn(tmp_path: Path) -> None:
    store = make_run(tmp_path, {"t1": "PF", "t2": "FP"}, {"tests": {"t1": [1, 0], "t2": [0, 1]}})
    tear(store.path / "tasks.jsonl")
    report = CliRunner().invoke(app, ["report", str(store.path), "--bootstrap", "20"])
    assert report.exit_code == 0, report.output
    export = CliRunner().invoke(app, ["export", "swebench", str(store.path), "-o", str(tmp_path / "out")])
    assert export.exit_code == 0, export.output
    assert {json.loads(line)["instance_id"] for line in (tmp_path / "out" / "predictions.tests.jsonl").open()} == {
        "t1", "t2"}


def replaced_whole(path: Path, rewrite: Callable[[], object]) -> None:
    """``rewrite`` replaces ``path`` by a rename: a new file (inode), the old one intact for whoever had it open, and
    no temporary file left beside it."""
    before = os.stat(path).st_ino
    with open(path, "rb") as held:
        old = held.read()
        rewrite()
        held.seek(0)
        assert held.read() == old  # written in place, a reader would see the new bytes over the old
    assert os.stat(path).st_ino != before, f"{path.name} was rewritten in place"
    assert not [p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}")], "a temporary was left"


def test_the_run_directory_files_are_replaced_whole(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.create({"n": 1}, [task("a")])
    replaced_whole(store.path / "config.yaml", lambda: store.create({"n": 2}, [task("a")]))
    assert store.config_data() == {"n": 2}
    rollout = Rollout(run_id="run", task_id="a", index=0, status="infra_error")
    store.save_rollout(rollout, [])
    retried = rollout.model_copy(update={"status": "submitted", "attempt": 2, "patch": "diff"})
    for name in ("rollout.json", "patch.diff", "trajectory.jsonl"):
        replaced_whole(store.path / "a" / "0" / name, lambda: store.save_rollout(retried, [{"role": "user"}]))
    verdict = Verdict(run_id="run", task_id="a", rollout_id="a/0", role="grade", status="infra_error")
    store.save_verdict(verdict)
    replaced_whole(store.path / "a" / "0" / "verdict.grade.json",
                   lambda: store.save_verdict(verdict.model_copy(update={"status": "pass"})))  # fmt: skip
    store.save_log("a/0", "attempt1.txt", "one")
    replaced_whole(store.path / "a" / "0" / "logs" / "attempt1.txt", lambda: store.save_log("a/0", "attempt1.txt", "two"))


def test_reports_exports_and_critic_files_are_replaced_whole(tmp_path: Path) -> None:
    from agentbon.critic.auto import CHOICE_FILE, _write
    from agentbon.critic.classifier import LogisticModel

    store = make_run(tmp_path, {"t1": "PF", "t2": "FP"}, {"tests": {"t1": [1, 0], "t2": [0, 1]}})
    runner = CliRunner()

    def invoke(*args: str) -> None:
        result = runner.invoke(app, list(args))
        assert result.exit_code == 0, result.output

    out = tmp_path / "out"
    for args, name in (
        (["report", str(store.path), "--bootstrap", "20"], store.path / "report.md"),
        (["export", "swebench", str(store.path), "-o", str(out)], out / "predictions.tests.jsonl"),
        (["export", "pairs", str(store.path), "-o", str(out / "pairs.jsonl")], out / "pairs.jsonl"),
    ):
        invoke(*args)
        replaced_whole(name, lambda args=args: invoke(*args))
    _write(store.path, {"critic": "prior"})
    replaced_whole(store.path / CHOICE_FILE, lambda: _write(store.path, {"critic": "classifier"}))
    model = LogisticModel.fit(np.array([[0.0], [1.0], [0.2], [0.9]]), np.array([0, 1, 0, 1]), ["f"], text=False)
    model.save(tmp_path / "critic.json")
    replaced_whole(tmp_path / "critic.json", lambda: model.save(tmp_path / "critic.json"))


def test_a_torn_tail_longer_than_a_read_block_is_cut_whole(tmp_path: Path) -> None:
    from agentbon.files import append_jsonl, read_jsonl

    log = tmp_path / "events.jsonl"
    log.write_text('{"a": 1}\n' + '{"patch": "' + "x" * 200_000)  # a large record, torn
    assert list(read_jsonl(log)) == [{"a": 1}]
    append_jsonl(log, ['{"b": 2}'])
    assert log.read_text() == '{"a": 1}\n{"b": 2}\n'
    only = tmp_path / "only.jsonl"
    only.write_text('{"torn": ')  # the first line itself torn
    append_jsonl(only, ['{"c": 3}'])
    assert list(read_jsonl(only)) == [{"c": 3}]
