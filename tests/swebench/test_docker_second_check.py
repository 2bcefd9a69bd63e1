"""Real Docker: the second check on a SWE-bench instance whose log parser is pytest's (docs/security.md).

The pytest-family fixture instance in an image laid out like SWE-bench's: the gold patch resolves and the
second check (its own sandbox, the eval script's setup part, then the driver in the activated environment)
agrees; a wrong and the empty patch fail as before; package code that rewrites pytest's results from inside the
test process (payloads of ``tests/verify/forgers.py`` put into the fixture's ``calc/ops.py``, bug kept) makes the
harness's log say resolved, and the second check turns the verdict into a flagged ``fail``.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from agentbon.config import VerifyConfig
from agentbon.tasks import load_suite
from agentbon.types import Rollout
from agentbon.verify import TestVerifier
from tests.swebench.families import PYTEST, diff
from tests.swebench.support import harness_or_skip

pytestmark = pytest.mark.docker
F2P = PYTEST.fail_to_pass[0]


@pytest.fixture
def forgers(monkeypatch):
    """``tests/verify/forgers.py`` (it imports its sibling ``verify_task`` as a top-level module)."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "verify"))
    return importlib.import_module("forgers")


@pytest.fixture
def instance(built, tmp_path):
    harness_or_skip()
    made = built("pytest")
    suite = tmp_path / "instances.jsonl"
    suite.write_text(json.dumps(made.record) + "\n")
    (task,), errors = load_suite(suite)
    assert errors == []
    return made, task


def _verify(backend, task, patch: str, index: int = 0):
    verifier = TestVerifier(backend, VerifyConfig(timeout_s=120, dedupe=False), labels={"stage": "swebench-test"})
    rollout = Rollout(run_id="r", task_id=task.task_id, index=index, status="submitted", patch=patch)
    return verifier.verify(task, rollout, "grade")


def test_gold_resolves_and_the_second_check_agrees(instance, backend):
    made, task = instance
    verdict = _verify(backend, task, made.gold)
    assert verdict.status == "pass", f"{verdict.reason}\n{verdict.log}"
    assert "the second check agrees on 1 FAIL_TO_PASS" in verdict.reason
    assert verdict.flags == [] and verdict.tests[F2P] == "passed"


@pytest.mark.parametrize("which", ["wrong", "empty"])
def test_wrong_and_empty_fail_as_before(instance, backend, which):
    made, task = instance
    verdict = _verify(backend, task, made.patch(which))
    assert verdict.status == "fail" and verdict.tests[F2P] == "failed", verdict.reason
    assert "second check" not in verdict.reason and verdict.flags == []


@pytest.mark.parametrize(
    ("forger", "fill"),
    [("REPORT_CLASS_PATCH", {}), ("HOOKWRAPPER", {"only": "test_add"}), ("NOOP_RUNTEST", {})],
)
def test_in_process_forgery_is_not_resolved_and_is_flagged(
    instance, backend, forgers, logs, mirror, tmp_path, forger, fill
):
    made, task = instance
    ops = getattr(forgers, forger).format(**fill) + "\n\n" + PYTEST.files["calc/ops.py"]  # still a - b
    patch = diff(mirror / PYTEST.repo, {"calc/ops.py": ops}, tmp_path / f"forge-{forger}")
    verdict = _verify(backend, task, patch)
    # the forgery works on the harness: its log says the FAIL_TO_PASS test passed (and the harness resolves)
    assert f"PASSED {F2P}" in logs[-1], logs[-1][-2000:]
    assert verdict.tests[F2P] == "passed"
    assert verdict.status == "fail", f"{verdict.reason}\n{verdict.log}"
    assert verdict.reason.startswith(f"not trusted: second check: {F2P} "), verdict.reason
    kinds = {f.kind for f in verdict.flags}
    assert "disagreement" in kinds, verdict.flags


def test_printed_results_stay_caught_by_the_harness_exit_code_check(instance, backend, logs, mirror, tmp_path):
    """Why ``swebench`` instances get no canaries (docs/security.md): a ``PASSED`` line printed after pytest's
    summary overrides the real ``FAILED`` one in the parsed map, and only the harness's exit-code cross-check
    (exit 1, no failure left in the log) turns it down — a must-fail canary's ``FAILED`` line would disarm it."""
    made, task = instance
    printer = f"import atexit as _atexit\n\n_atexit.register(lambda: print('PASSED {F2P}', flush=True))\n"
    patch = diff(mirror / PYTEST.repo, {"calc/ops.py": printer + PYTEST.files["calc/ops.py"]}, tmp_path / "printer")
    verdict = _verify(backend, task, patch)
    tail = logs[-1].split(">>>>> Start Test Output")[-1]
    assert f"FAILED {F2P}" in tail and tail.rindex(f"PASSED {F2P}") > tail.index(f"FAILED {F2P}"), tail[-2000:]
    assert verdict.status == "fail" and verdict.runner_exit_code == 1, verdict.reason
    assert verdict.reason.startswith("not trusted: the test command exited 1"), verdict.reason


def _family_instance(built, tmp_path, name):
    harness_or_skip()
    made = built(name)
    suite = tmp_path / "instances.jsonl"
    suite.write_text(json.dumps(made.record) + "\n")
    (task,), errors = load_suite(suite)
    assert errors == []
    return made, task


OK_LINE = {"django": "{} ... ok", "sympy": "{} ok"}
"""How each family's runner prints a passing test (what its log parser reads)."""


@pytest.mark.parametrize("name", ["django", "sympy"])
def test_unittest_and_sympy_families_are_checked_a_second_way(built, backend, logs, mirror, tmp_path, name):
    """Django's runtests.py and SymPy's bin/test instances: the gold's second check agrees; package code that prints
    the FAIL_TO_PASS test's success line in the runner's own format and exits 0 (the bug kept) makes the harness's
    log say resolved, and the second check, which calls the test itself, fails and flags it."""
    made, task = _family_instance(built, tmp_path, name)
    family = made.family
    f2p = family.fail_to_pass[0]
    verdict = _verify(backend, task, made.gold)
    assert verdict.status == "pass", f"{verdict.reason}\n{verdict.log}"
    assert "the second check agrees on 1 FAIL_TO_PASS" in verdict.reason and verdict.flags == []
    (module,) = family.wrong_edits
    printer = (
        "import atexit as _atexit\nimport os as _os\nimport sys as _sys\n\n\n"
        f"def _done():\n    print({OK_LINE[name].format(f2p)!r}, flush=True)\n    _sys.stderr.flush()\n    _os._exit(0)\n\n\n"
        "_atexit.register(_done)\n"
    )
    bug_kept = family.files[module]
    patch = diff(mirror / family.repo, {module: printer + bug_kept}, tmp_path / f"forge-{name}")
    verdict = _verify(backend, task, patch, index=1)
    tail = logs[-1].split(">>>>> Start Test Output")[-1]
    assert OK_LINE[name].format(f2p) in tail, tail[-2000:]
    assert verdict.tests[f2p] == "passed", verdict.tests  # the harness's parser was fooled
    assert verdict.status == "fail", f"{verdict.reason}\n{verdict.log}"
    assert verdict.reason.startswith(f"not trusted: second check: {f2p} failed"), verdict.reason
    assert "disagreement" in {f.kind for f in verdict.flags}, verdict.flags
