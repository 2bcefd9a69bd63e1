"""``eval_report.json``'s bytes, pinned: every bucket, error kind, flag, triage key and input error of one
representative report, against ``data/eval_report.json`` (what the report wrote before it was a typed record)."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest

from agentbon.evaluate.match import Matched
from agentbon.evaluate.predictions import InputError, Prediction
from agentbon.evaluate.report import build_eval_report, write_report
from agentbon.store import RunStore
from agentbon.types import Flag, RepoSource, Task, TestSet, Verdict

GOLDEN = Path(__file__).parent / "data" / "eval_report.json"
TRIAGE = {"OOM": ("out_of_memory", "environment"), "ModuleNotFound": ("missing_module", "ambiguous")}


def fake_triage(text: str) -> tuple[str, str] | None:
    """The harness's triage, by one word of the log (the real one needs ``swebench``)."""
    return next((found for word, found in TRIAGE.items() if word in text), None)


def representative(tmp_path: Path) -> tuple[RunStore, Matched, list[Task], list[InputError]]:
    store = RunStore(tmp_path / "ev")
    ids = "abcdefghijm"
    tasks = [Task(task_id=t, problem_statement="p", repo=RepoSource(url=".", base_commit="HEAD"), grade=TestSet())
             for t in ids]  # fmt: skip
    verdicts = {
        "a": dict(status="pass", tests={"t::ok": "passed"}, duration_s=1.25, patch_hash="h-a"),
        "b": dict(status="fail", tampered=["tests/test_b.py"], reason="F2P failed"),
        "c": dict(status="fail", flags=[Flag(kind="forged", detail="canary")], log="ModuleNotFound: np"),
        "d": dict(status="fail", patch_applied=False, reason="patch does not apply", log="OOM"),
        "e": dict(status="fail", timed_out=True, reason="test run timed out", log="partial"),
        "f": dict(status="infra_error", reason="SandboxGone: gone", log="OOM"),
        "g": dict(status="undecided", reason="no tests"),
    }
    with mock.patch("agentbon.store.os.fsync"):
        store.create({"n": 1}, tasks)
        for tid, fields in verdicts.items():
            store.save_verdict(Verdict(run_id="ev", task_id=tid, rollout_id=f"{tid}/0", role="grade", **fields))

    def p(tid: str, line: int, patch: str = "diff") -> Prediction:
        return Prediction(instance_id=tid, model_name_or_path="org/m", model_patch=patch, line=line)

    matched = Matched(
        graded={t: p(t, i + 1) for i, t in enumerate("abcdefgh")}, empty={"i": p("i", 9, "")},
        blank={"j": p("j", 10, " \n")}, unloaded={"u": p("u", 11)}, model="org/m",
    )  # fmt: skip
    errors = [
        InputError(file="preds.jsonl", line=12, key="instance_id", instance_id="zz", problem="'zz' is not a task"),
        InputError(file="preds.jsonl", problem="not JSON"),
    ]
    return store, matched, tasks, errors


@pytest.fixture
def report_bytes(tmp_path: Path) -> bytes:
    store, matched, tasks, errors = representative(tmp_path)
    with mock.patch("agentbon.verify.harness.triage", fake_triage):
        report = build_eval_report(store, matched, tasks, errors, "preds.jsonl", {"u": "no problem_statement"})
    return write_report(store, report).read_bytes()


def test_the_file_is_byte_identical_to_the_pinned_one(report_bytes: bytes) -> None:
    assert report_bytes.decode() == GOLDEN.read_text()
