"""`agentbon eval` on the real Docker engine and the real verifier: a gold patch, one that applies no way and one
whose tests run past the timeout, in the harness's buckets (the last two are error instances)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from eval_support import pred, write_jsonl

from agentbon.config import load_config
from agentbon.evaluate import evaluate
from agentbon.store import RunStore
from agentbon.testing import init_repo
from agentbon.types import RepoSource, Task, TestSet

pytestmark = [pytest.mark.docker, pytest.mark.ray, pytest.mark.usefixtures("ray_session")]

FILES = {
    "calc/__init__.py": "",
    "calc/ops.py": "def add(a, b):\n    return a - b\n",
    "tests/test_ops.py": "from calc.ops import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
}
HIDDEN = "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def diff(repo: Path, scratch: Path, files: dict[str, str]) -> str:
    subprocess.run(["git", "clone", "-q", str(repo), str(scratch)], check=True, capture_output=True)
    for name, text in files.items():
        (scratch / name).parent.mkdir(parents=True, exist_ok=True)
        (scratch / name).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=scratch, check=True)
    return subprocess.run(["git", "diff", "--cached"], cwd=scratch, check=True, capture_output=True, text=True).stdout


def calc_repo(tmp_path: Path) -> tuple[Path, str, TestSet]:
    """The calc repository, its base commit and the grade: the hidden test_add (FAIL_TO_PASS) and test_zero."""
    repo = tmp_path / "repo"
    sha = init_repo(repo, FILES)
    grade = TestSet(
        fail_to_pass=["tests/test_hidden.py::test_add"], pass_to_pass=["tests/test_ops.py::test_zero"],
        patch=diff(repo, tmp_path / "t", {"tests/test_hidden.py": HIDDEN}), files=["tests/test_hidden.py"],
    )  # fmt: skip
    return repo, sha, grade


def test_eval_grades_predictions_with_the_real_verifier(engine, tmp_path: Path) -> None:
    repo, sha, grade = calc_repo(tmp_path)
    tasks = [
        Task(task_id=tid, problem_statement="add() subtracts", repo=RepoSource(url=str(repo), base_commit=sha), grade=grade)
        for tid in ("calc-gold", "calc-stale", "calc-slow")
    ]
    gold = diff(repo, tmp_path / "g", {"calc/ops.py": "def add(a, b):\n    return a + b\n"})
    stale = gold.replace("-    return a - b", "-    return a * b")  # made against another version: does not apply
    slow = diff(repo, tmp_path / "s", {"calc/ops.py": "import time\n\n\ndef add(a, b):\n    time.sleep(600)\n    return a + b\n"})
    entries = [pred("calc-gold", gold), pred("calc-stale", stale), pred("calc-slow", slow)]
    preds = write_jsonl(tmp_path / "preds.jsonl", entries)
    config = load_config(overrides=[f"run_dir={tmp_path / 'runs'}", "verify.concurrency=2", "verify.timeout_s=30", "sandbox.cpus=none"])
    result = evaluate(tasks, preds, config, suite="calc.jsonl")
    report = result.report
    assert (report.resolved_ids, report.unresolved_ids) == (["calc-gold"], [])
    assert report.error_ids == ["calc-slow", "calc-stale"] and report.retry_ids == []
    assert report.completed_instances == 1 and result.exit_code == 0  # final errors, as the harness's
    stale_entry = report.instances["calc-stale"]
    assert stale_entry.patch_applied is False and "patch does not apply" in stale_entry.reason
    assert stale_entry.error == "patch_apply"
    slow_entry = report.instances["calc-slow"]
    assert (slow_entry.error, slow_entry.timed_out, slow_entry.verdict) == ("timeout", True, "fail")
    assert report.failure_reasons == {"calc-slow": "tests_timed_out"}  # the harness's triage of the log
    gold_entry = report.instances["calc-gold"]
    assert gold_entry.tests == {"tests/test_hidden.py::test_add": "passed", "tests/test_ops.py::test_zero": "passed"}
    assert gold_entry.tampered == []
    again = evaluate(tasks, preds, config, suite="calc.jsonl")  # resumed: nothing left to grade
    assert again.batch is None and again.report.resolved_ids == ["calc-gold"]
    assert len(RunStore(result.path).verdicts("grade")) == 3


def test_an_ensemble_runs_the_evidence_and_reports_the_selection_loss_it_causes(engine, tmp_path: Path) -> None:
    """Two systems on the real verifier: both patches pass the evidence (test_zero), only one the hidden test, so the
    tests selector chooses uniformly between them: selected@2 = 1/2 (brute force over the subsets), coverage@2 = 1."""
    from agentbon.evaluate.ensemble_run import evaluate_ensemble
    from agentbon.protocols import Candidate
    from agentbon.select import make_selector
    from tests.metrics.test_selectors_on_subsets import brute

    repo, sha, grade = calc_repo(tmp_path)
    evidence = TestSet(pass_to_pass=["tests/test_ops.py::test_zero"])
    source = RepoSource(url=str(repo), base_commit=sha)
    tasks = [Task(task_id="calc", problem_statement="add() subtracts", repo=source, grade=grade, evidence=evidence)]
    gold = diff(repo, tmp_path / "g", {"calc/ops.py": "def add(a, b):\n    return a + b\n"})
    zero = diff(repo, tmp_path / "z", {"calc/ops.py": "def add(a, b):\n    return 0\n"})
    files = [write_jsonl(tmp_path / "a.jsonl", [pred("calc", gold, model="a")]),
             write_jsonl(tmp_path / "b.jsonl", [pred("calc", zero, model="b")])]  # fmt: skip
    config = load_config(overrides=[f"run_dir={tmp_path / 'runs'}", "verify.timeout_s=60"])
    result = evaluate_ensemble(tasks, files, config, suite="calc.jsonl")
    assert result.exit_code == 0
    store = RunStore(result.path)
    ev, gr = store.verdicts("evidence"), store.verdicts("grade")
    assert (ev["calc/0"].status, ev["calc/1"].status, gr["calc/0"].status, gr["calc/1"].status) == (
        "pass", "pass", "pass", "fail")  # fmt: skip
    cands = [Candidate(rollout=r, evidence=ev[r.rollout_id], grade=gr[r.rollout_id])
             for r in sorted(store.rollouts().values(), key=lambda r: r.index)]  # fmt: skip
    tests = make_selector("tests", store.config().select)
    metrics = result.summary.metrics
    assert metrics.coverage.mean == [0.5, 1.0]
    assert metrics.selectors["tests"].selected.mean == [brute(tests, "calc", cands, [0, 1], k) for k in (1, 2)] == [0.5, 0.5]
    assert metrics.selectors["tests"].loss.mean == [0.0, 0.5]
    assert [s.report.resolved_ids for s in result.systems] == [["calc"], []]
