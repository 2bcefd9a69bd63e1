"""``eval_report.json``'s bytes, pinned: every bucket, error kind, flag, triage key and input error of one
representative report, against ``data/eval_report.json`` (what the report wrote before it was a typed record); the
file read back, and what the loader refuses."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import pytest

from agentbon.errors import ConfigError
from agentbon.evaluate.match import Matched
from agentbon.evaluate.predictions import InputError, Prediction
from agentbon.evaluate.report import REPORT, build_eval_report, read_eval_report
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
def written(tmp_path: Path) -> Path:
    store, matched, tasks, errors = representative(tmp_path)
    with mock.patch("agentbon.verify.harness.triage", fake_triage):
        report = build_eval_report(store, matched, tasks, errors, "preds.jsonl", {"u": "no problem_statement"})
    return report.write(store.path / REPORT)


def test_the_file_is_byte_identical_to_the_pinned_one(written: Path) -> None:
    assert written.read_text() == GOLDEN.read_text()


def test_the_file_reads_back_to_the_same_record(written: Path) -> None:
    report = read_eval_report(written)
    assert report.to_json() == written.read_text()
    assert report.instances["c"].flags[0].kind == "forged" and report.input_errors[1].line is None
    assert (report.failure_reasons["c"], report.retry_ids) == ("missing_module", ["f", "h"])


def test_an_older_file_reads_with_the_keys_it_lacks_empty(written: Path) -> None:
    data = json.loads(written.read_text())
    for key in ("retry_ids", "flagged_ids", "infra_failure_ids", "infra_failure_instances", "failure_reasons"):
        del data[key]
    del data["instances"]["c"]["flags"]
    written.write_text(json.dumps(data))
    report = read_eval_report(written)
    assert (report.retry_ids, report.flagged_ids, report.infra_failure_instances) == ([], {}, 0)
    assert report.instances["c"].flags == [] and report.resolved_ids == ["a"]


@pytest.mark.parametrize("change", [{"grader": None}, {"schema_version": 3}])
def test_a_file_that_is_not_agentbons_eval_report_is_refused(written: Path, change: dict) -> None:
    data = {k: v for k, v in {**json.loads(written.read_text()), **change}.items() if v is not None}
    written.write_text(json.dumps(data))  # the harness's own report has no grader
    with pytest.raises(ConfigError, match="not an agentbon eval report"):
        read_eval_report(written)
