"""``eval_report.json`` against the SWE-bench harness's own report functions, on the same per-instance outcomes.

Both sides get the same predictions file, the same dataset file and the same outcome per instance. The harness's
side runs its own code: ``get_predictions_from_file`` and ``run_evaluation.main``'s keying by id, its
``get_dataset_from_preds`` (which instances it would run), ``get_eval_report`` on each test log (its
``report.json``), the files ``run_instance`` leaves for an apply failure or a timeout (no ``report.json``), and
``make_run_report``. agentbon's side loads the dataset with its loader, matches the predictions, and builds its
report from grade verdicts: ``harness.judge`` on the same logs, and the records its verifier writes for a patch
that applies no way and a test run past the timeout. The reports must agree on every key the harness writes.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from eval_support import pred, write_jsonl

from agentbon.evaluate.report import EvalReport, build_eval_report
from agentbon.evaluate.run import HARNESS_TEST_TIMEOUT_S, prepare, unloaded_tasks
from agentbon.store import RunStore
from agentbon.tasks import load_suite
from agentbon.types import Verdict
from agentbon.verify import harness
from tests.swebench.families import FAMILIES, build
from tests.swebench.support import harness_or_skip
from tests.swebench.test_judge import LOGS

MODEL = "org/model-x"  # a slash: the harness keeps its logs under org__model-x
RUN_ID = "diff"
APPLY_OUTPUT = (
    "Checking patch calc/ops.py...\nerror: while searching for:\n    return a * b\n"
    "error: patch failed: calc/ops.py:4\nerror: calc/ops.py: patch does not apply\n"
)
PARTIAL = "+ : '>>>>> Start Test Output'\n+ pytest -rA\ntests/test_ops.py::test_add "
LOG_OF = {
    "resolved": LOGS["resolved"],
    # unresolved, and the harness's triage finds a module missing (ambiguous) or memory short (environment)
    "unresolved": LOGS["f2p failed"].replace("+ pytest -rA\n", "+ pytest -rA\nModuleNotFoundError: No module named 'np'\n"),
    "oom": LOGS["f2p failed"].replace("+ pytest -rA\n", "+ pytest -rA\nOSError: [Errno 12] Cannot allocate memory\n"),
}


def iid(name: str) -> str:
    return f"fixture__calc-{name}"


@pytest.fixture
def case(tmp_path: Path, mirror: Path):
    """The dataset, the predictions file (with an id the dataset lacks) and the outcome of each graded instance."""
    harness_or_skip()
    made = build(FAMILIES["pytest"], mirror, tmp_path / "scratch")
    stale = made.gold.replace("-    return a - b", "-    return a * b")  # does not apply, in any way
    names = ["resolved", "unresolved", "oom", "apply", "timeout", "empty", "null", "blank", "dup-then-fix",
             "dup-then-empty", "missing", "unloadable"]  # fmt: skip
    records = [{**made.record, "instance_id": iid(n)} for n in names]
    del records[-1]["problem_statement"]  # agentbon cannot load it; it is still part of the dataset
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in records))
    entries = [
        pred(iid("resolved"), made.gold, MODEL), pred(iid("unresolved"), made.wrong, MODEL),
        pred(iid("oom"), made.wrong, MODEL), pred(iid("apply"), stale, MODEL), pred(iid("timeout"), made.gold, MODEL),
        pred(iid("empty"), "", MODEL), pred(iid("null"), None, MODEL), pred(iid("blank"), " \n\t\n", MODEL),
        pred(iid("dup-then-fix"), "", MODEL), pred(iid("dup-then-empty"), made.wrong, MODEL),
        pred("fixture__calc-stranger", made.gold, MODEL),
        pred(iid("dup-then-fix"), made.gold, MODEL), pred(iid("dup-then-empty"), "", MODEL),
    ]  # fmt: skip
    outcomes = {iid("resolved"): "resolved", iid("unresolved"): "unresolved", iid("oom"): "oom",
                iid("apply"): "apply", iid("timeout"): "timeout", iid("blank"): "apply",
                iid("dup-then-fix"): "resolved"}  # fmt: skip
    return made, dataset, entries, outcomes


def harness_report(tmp_path: Path, dataset: Path, preds: Path, outcomes: dict[str, str]) -> tuple[dict, set[str]]:
    """The harness's report on these outcomes, and the ids it would have run, from its own functions."""
    from swebench.harness import run_evaluation
    from swebench.harness.constants import APPLY_PATCH_FAIL, LOG_INSTANCE, LOG_REPORT, LOG_TEST_OUTPUT
    from swebench.harness.grading import get_eval_report
    from swebench.harness.reporting import make_run_report
    from swebench.harness.run_evaluation import get_dataset_from_preds, load_instances
    from swebench.harness.utils import get_predictions_from_file, make_test_spec

    keyed = 'predictions = {pred["instance_id"]: pred for pred in predictions}'  # the last of an id wins
    assert keyed in inspect.getsource(run_evaluation.main)
    predictions = {p["instance_id"]: p for p in get_predictions_from_file(str(preds), str(dataset), "test")}
    to_run = get_dataset_from_preds(str(dataset), "test", None, predictions, RUN_ID, False)
    root = Path("logs/run_evaluation") / RUN_ID / MODEL.replace("/", "__")
    for instance in to_run:
        spec, p = make_test_spec(instance), predictions[instance["instance_id"]]
        folder = root / spec.instance_id
        folder.mkdir(parents=True)
        kind = outcomes[spec.instance_id]
        if kind == "apply":  # run_instance raises before the tests: a log, no report
            (folder / LOG_INSTANCE).write_text(f"Failed to apply patch to container\n{APPLY_PATCH_FAIL}:\n{APPLY_OUTPUT}")
        elif kind == "timeout":  # run_instance writes the output and its line, then raises: no report
            (folder / LOG_TEST_OUTPUT).write_text(f"{PARTIAL}\n\nTimeout error: {int(HARNESS_TEST_TIMEOUT_S)} seconds exceeded.")
            (folder / LOG_INSTANCE).write_text(f"Test timed out after {int(HARNESS_TEST_TIMEOUT_S)} seconds.\n")
        else:
            (folder / LOG_TEST_OUTPUT).write_text(LOG_OF[kind])
            report = get_eval_report(spec, p, str(folder / LOG_TEST_OUTPUT), include_tests_status=True)
            (folder / LOG_REPORT).write_text(json.dumps(report, indent=4))
    full = load_instances(str(dataset), "test", None, None)
    path = make_run_report(predictions, full, RUN_ID, None, str(tmp_path / "reports"))
    return json.loads(path.read_text()), {i["instance_id"] for i in to_run}


def agentbon_report(
    tmp_path: Path, made, dataset: Path, preds: Path, outcomes: dict[str, str]
) -> tuple[EvalReport, set[str]]:
    """agentbon's report on the same outcomes: its loader and matching, its verdicts, its report builder."""
    tasks, errors = load_suite(dataset)
    unloaded = unloaded_tasks(errors, tasks)
    matched, input_errors = prepare(preds, tasks, suite=str(dataset), unloaded=unloaded)
    store = RunStore(tmp_path / "runs" / RUN_ID)
    by_id = {t.task_id: t for t in tasks}
    for tid, p in matched.graded.items():
        kind, base = outcomes[tid], dict(run_id=RUN_ID, task_id=tid, rollout_id=f"{tid}/0", role="grade")
        if kind == "apply":  # as the verifier records a patch no fallback applies
            v = Verdict(**base, status="fail", patch_applied=False, reason="patch does not apply", log=APPLY_OUTPUT)
        elif kind == "timeout":  # as the verifier records a test run past verify.timeout_s
            log = harness.timed_out_log(PARTIAL, HARNESS_TEST_TIMEOUT_S)
            v = Verdict(**base, status="fail", timed_out=True, reason="test run timed out", log=log)
        else:
            task = by_id[tid]
            judged = harness.judge(task, task.grade, p.model_patch, LOG_OF[kind])
            v = Verdict(**base, **judged.verdict_fields())
        store.save_verdict(v)
    report = build_eval_report(store, matched, tasks, input_errors, str(preds), unloaded)
    return report, set(matched.graded) | set(matched.blank)


def test_the_report_equals_the_harness_key_by_key(case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from swebench.harness.run_evaluation import get_dataset_from_preds
    from swebench.harness.utils import get_predictions_from_file

    made, dataset, entries, outcomes = case
    monkeypatch.chdir(tmp_path)  # the harness keeps its logs under ./logs
    preds = write_jsonl(tmp_path / "preds.jsonl", entries)
    ours, run_here = agentbon_report(tmp_path, made, dataset, preds, outcomes)

    # The harness refuses the whole file for an id the dataset lacks; agentbon names it and grades the rest.
    every = {p["instance_id"]: p for p in get_predictions_from_file(str(preds), str(dataset), "test")}
    with pytest.raises(ValueError, match="fixture__calc-stranger"):
        get_dataset_from_preds(str(dataset), "test", None, every, RUN_ID, False)
    assert [(e.line, e.instance_id) for e in ours.input_errors] == [
        (9, iid("dup-then-fix")), (10, iid("dup-then-empty")), (11, "fixture__calc-stranger"),
    ]  # fmt: skip
    known = write_jsonl(tmp_path / "known.jsonl", [e for e in entries if e["instance_id"] != "fixture__calc-stranger"])
    theirs, run_there = harness_report(tmp_path, dataset, known, outcomes)

    assert run_here == run_there  # the same predictions go to a sandbox (the blank one only to fail to apply)
    file = json.loads(ours.to_json())
    assert set(theirs) <= set(file), set(theirs) - set(file)
    assert {k: file[k] for k in theirs} == theirs
    # ... and the cases mean what they say
    assert theirs["resolved_ids"] == [iid("dup-then-fix"), iid("resolved")]  # the last prediction of an id counts
    assert theirs["unresolved_ids"] == [iid("oom"), iid("unresolved")]
    assert theirs["error_ids"] == [iid("apply"), iid("blank"), iid("timeout")]
    assert theirs["empty_patch_ids"] == [iid("dup-then-empty"), iid("empty"), iid("null")]
    assert theirs["incomplete_ids"] == [iid("missing"), iid("unloadable")] and theirs["total_instances"] == 12
    assert theirs["failure_reasons"] == {
        iid("oom"): "out_of_memory", iid("timeout"): "tests_timed_out", iid("unresolved"): "missing_module",
    }  # fmt: skip
    assert (theirs["infra_failure_ids"], theirs["ambiguous_failure_ids"]) == ([iid("oom")], [iid("timeout"), iid("unresolved")])
    assert [ours.instances[iid(n)].error for n in ("apply", "blank", "timeout")] == [
        "patch_apply", "blank_patch", "timeout",
    ]  # fmt: skip
    assert ours.retry_ids == []  # none of these errors is one a second invocation would grade


def test_a_prediction_for_a_record_that_did_not_load_is_an_error(case, tmp_path: Path) -> None:
    made, dataset, _, _ = case
    preds = write_jsonl(tmp_path / "p.jsonl", [pred(iid("unloadable"), made.gold, MODEL)])
    report, _ = agentbon_report(tmp_path, made, dataset, preds, {})
    assert report.error_ids == [iid("unloadable")] and report.submitted_ids == [iid("unloadable")]
    entry = report.instances[iid("unloadable")]
    assert entry.error == "task_not_loaded" and "problem_statement" in entry.reason
    assert report.total_instances == 12 and len(report.incomplete_ids) == 11


def test_the_default_timeout_is_the_harness_one() -> None:
    harness_or_skip()
    import re

    from swebench.harness import run_evaluation

    found = re.search(r'"--timeout",\s*type=int,\s*default=([\d_]+)', inspect.getsource(run_evaluation))
    assert found and float(found.group(1).replace("_", "")) == HARNESS_TEST_TIMEOUT_S
