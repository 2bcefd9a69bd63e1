"""``eval_report.json``'s flags: each instance's kinds and details beside ``tampered``, and one line per kind."""

from __future__ import annotations

import io
from pathlib import Path
from unittest import mock

from rich.console import Console

from agentbon.evaluate.match import Matched
from agentbon.evaluate.predictions import Prediction
from agentbon.evaluate.report import build_eval_report
from agentbon.evaluate.table import print_report
from agentbon.store import RunStore
from agentbon.types import Flag, RepoSource, Task, TestSet, Verdict

IDS = ("a", "b", "c", "d")


def graded(tmp_path: Path) -> tuple[RunStore, Matched, list[Task]]:
    store = RunStore(tmp_path / "ev")
    tasks = [Task(task_id=t, problem_statement="p", repo=RepoSource(url=".", base_commit="HEAD"), grade=TestSet())
             for t in IDS]  # fmt: skip
    forged = Flag(kind="forged", detail="canary test_q9 passed but was planted to fail")
    verdicts = {
        "a": dict(status="pass"),
        "b": dict(status="fail", tampered=["tests/test_b.py"]),  # a legacy verdict: tampered paths, no flag
        "c": dict(status="fail", flags=[forged, Flag(kind="suspicious_code", detail="imports _pytest.reports")]),
        "d": dict(status="fail", flags=[Flag(kind="forged", detail="canary test_z1 failed")]),
    }
    with mock.patch("agentbon.store.os.fsync"):
        store.create({"n": 1}, tasks)
        for tid, fields in verdicts.items():
            store.save_verdict(Verdict(run_id="ev", task_id=tid, rollout_id=f"{tid}/0", role="grade", **fields))
    preds = {
        t: Prediction(instance_id=t, model_name_or_path="m", model_patch="diff", line=i + 1) for i, t in enumerate(IDS)
    }
    return store, Matched(graded=preds, model="m"), tasks


def test_instances_carry_flags_beside_tampered(tmp_path):
    store, matched, tasks = graded(tmp_path)
    report = build_eval_report(store, matched, tasks, [], "preds.jsonl")
    inst = report.instances
    assert inst["a"].flags == [] and inst["a"].tampered == []
    assert inst["b"].tampered == ["tests/test_b.py"]
    assert inst["b"].flags == [Flag(kind="tampered", detail="touched protected files", paths=["tests/test_b.py"])]
    assert [(f.kind, f.detail) for f in inst["c"].flags] == [
        ("forged", "canary test_q9 passed but was planted to fail"), ("suspicious_code", "imports _pytest.reports"),
    ]  # fmt: skip
    assert report.flagged_ids == {"tampered": ["b"], "forged": ["c", "d"], "suspicious_code": ["c"]}


def test_terminal_prints_one_line_per_flag_kind(tmp_path):
    store, matched, tasks = graded(tmp_path)
    out = io.StringIO()
    print_report(build_eval_report(store, matched, tasks, [], "preds.jsonl"), Console(file=out, width=200))
    text = out.getvalue()
    lines = [line for line in text.splitlines() if line.startswith("flagged ")]
    assert lines == ["flagged tampered: 1 instance (b)", "flagged forged: 2 instances (c, d)",
                     "flagged suspicious_code: 1 instance (c)"]  # fmt: skip
    assert "c\tunresolved\tforged; suspicious_code\t" in text  # the per-instance line names the kinds too
