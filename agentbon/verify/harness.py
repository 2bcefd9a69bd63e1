"""Grading ``swebench`` test sets the way the SWE-bench harness does, with the harness's own code (docs/swebench.md).

The verifier has applied the candidate (``git apply``) and undone its test-file changes; here the
harness's eval script (``make_test_spec`` adds the recording of the test command's exit code) runs in
that fresh sandbox, its whole output is the log, and ``get_logs_eval`` + ``get_eval_report`` decide:
``pass`` iff the harness calls the instance resolved. The ``swebench`` package is the optional extra
``agentbon[swebench]``, imported on first use.
"""

from __future__ import annotations

import functools
import os
import shlex
import tempfile
from types import SimpleNamespace
from typing import Any

from agentbon.errors import MissingExtra
from agentbon.protocols import Sandbox
from agentbon.types import Task, TestOutcome, TestSet
from agentbon.verify.judged import Judged, fail, timed_out_log

LOG_LIMIT = 32 << 20
CONDA_ACTIVATE = "/opt/miniconda3/bin/activate"
"""Where SWE-bench's instance images keep conda's activation script (the harness's eval scripts source it)."""
ACTIVATE = (
    f"if [ -f {CONDA_ACTIVATE} ]; then . {CONDA_ACTIVATE} && conda activate testbed "
    '|| { echo "agentbon: conda activate testbed failed in this image" >&2; exit 97; }; fi; '
)
"""A command prefix: the instance image's ``testbed`` environment, activated as the harness's eval scripts do,
for an instance graded by agentbon's own runner (a record with no ``eval_script``); a no-op elsewhere."""
"""Bytes of eval-script output kept (the harness reads the whole log; a flood past this is cut, and fails)."""
_OUTCOME: dict[str, TestOutcome] = {
    "PASSED": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "xfailed",
}


@functools.cache
def swebench() -> SimpleNamespace:
    """The harness functions agentbon grades with; ``MissingExtra`` when the ``swebench`` package is absent."""
    try:
        import swebench as package
        from swebench.harness import constants, grading, infra_failure, utils
        from swebench.harness.log_parsers import PARSER_REGISTRY
    except ImportError as e:
        raise MissingExtra("swebench", "swebench") from e
    if int(package.__version__.split(".")[0]) < 5:
        raise MissingExtra(
            f"swebench>=5 (found {package.__version__}, whose instances carry no eval script)", "swebench"
        )
    return SimpleNamespace(
        version=package.__version__,
        make_test_spec=utils.make_test_spec,
        get_logs_eval=grading.get_logs_eval,
        get_eval_report=grading.get_eval_report,
        parse_test_exit_code=grading.parse_test_exit_code,
        resolve_case=getattr(grading, "_resolve_case", None),
        classify_logs=infra_failure.classify_logs,
        classify_text=infra_failure.classify_text,
        parsers=PARSER_REGISTRY,
        invalid_markers={
            constants.APPLY_PATCH_FAIL: "the harness log says a patch did not apply",
            constants.RESET_FAILED: "the harness log says the reset of the test files failed",
            constants.TESTS_ERROR: "the harness log says the tests errored",
            constants.TESTS_TIMEOUT: "the harness log says the tests timed out",
        },
        markers=(constants.START_TEST_OUTPUT, constants.END_TEST_OUTPUT),
    )


def instance(task: Task, tests: TestSet) -> dict[str, Any]:
    """The dataset fields ``make_test_spec`` reads, for this task's test set (stored in the task at load time)."""
    return {
        "instance_id": task.task_id,
        "image": task.environment.image or "",
        "repo": task.metadata.get("repo", ""),
        "version": task.metadata.get("version", ""),
        "FAIL_TO_PASS": list(tests.fail_to_pass),
        "PASS_TO_PASS": list(tests.pass_to_pass),
        "log_parser": tests.log_parser,
        "eval_type": tests.eval_type or "pass_and_fail",
        "eval_script": tests.eval_script,
    }


def check(tests: TestSet) -> str:
    """What keeps this test set from being graded by the harness ('' when nothing); ``MissingExtra`` without it."""
    if not tests.eval_script.strip():
        return "runner 'swebench' needs the instance's eval_script"
    if tests.log_parser not in swebench().parsers:
        return f"log_parser {tests.log_parser!r} is not in swebench {swebench().version}'s PARSER_REGISTRY"
    return ""


PYTEST_PARSERS = frozenset(
    {"parse_log_pytest", "parse_log_pytest_options", "parse_log_pytest_v2", "parse_log_seaborn"}
)
"""The harness's parsers of pytest's ``-rA`` summary (by function: ``parse_log_flask`` is ``parse_log_pytest``);
their instances' FAIL_TO_PASS ids are pytest node ids, which the second check can run again. Not
``parse_log_matplotlib``: it rewrites parameters (``MouseButton.LEFT`` → ``1``), so its ids are not always node ids
and an honest candidate would be flagged (docs/security.md, "Second check")."""


SECOND_RUNNERS = {
    **dict.fromkeys(PYTEST_PARSERS, "pytest"),
    "parse_log_matplotlib": "pytest-plain",
    "parse_log_django": "django",
    "parse_log_sympy": "sympy",
}
"""How the second check drives an instance, by its log parser's function (docs/security.md, "Second check"):
pytest node ids (``pytest-plain``: only ids without parameters, which ``parse_log_matplotlib`` leaves as they are),
Django's ``tests/runtests.py`` with the ids as test labels, SymPy's test functions called from their files."""


def pytest_family(tests: TestSet) -> bool:
    """Whether the test set's log parser reads pytest output (so its ids are pytest node ids)."""
    return second_runner(tests) in ("pytest", "pytest-plain")


def second_runner(tests: TestSet) -> str | None:
    """How the second check drives this test set's FAIL_TO_PASS ids (None: it cannot: a parser of another
    language's runner)."""
    parser = swebench().parsers.get(tests.log_parser)
    return SECOND_RUNNERS.get(getattr(parser, "__name__", ""))


def eval_script(task: Task, tests: TestSet) -> str:
    """The script the harness would run for this test set (with its recording of the test exit code)."""
    return swebench().make_test_spec(instance(task, tests)).eval_script


APPLIED = "agentbon-applied: "
"""Head of the line the apply script prints with the command that applied the patch."""


def apply_script(diff: str, paths: str) -> str:
    """Shell that applies a candidate the way the harness does (swebench's ``GIT_APPLY_CMDS``), staged for the guard.

    In the harness's order: ``git apply``, then ``git apply --3way``, then ``patch --batch --forward --fuzz=5``, and
    when none applies, the harness's last check, ``git apply --check --reverse`` on the tree its last attempt (the
    ``patch`` run, for real) left: a patch already in the tree counts as applied. Each earlier attempt is tried
    with ``--check``/``--dry-run`` first, so a failed one leaves nothing behind (the harness resets the tree
    between attempts instead, with ``git clean``, which would also undo what the image changed in it). What ``patch`` wrote is staged from the patch's own file list
    (``paths``: NUL-separated), so untracked files of the image are never taken for the candidate's. ``git apply
    --reject`` is left out: it exits non-zero whenever a hunk is rejected, so it succeeds only where plain ``git
    apply`` did (tests/swebench/test_apply_chain.py runs both chains on the same patches). Exit 97 when nothing
    applies; the output then holds each attempt's error."""
    d, p = shlex.quote(diff), shlex.quote(paths)
    fuzz = f"patch --batch --forward --fuzz=5 -p1 -i {d}"  # its .orig backups too, as in the harness's tree
    return (
        f"if git apply --index --whitespace=nowarn {d}; then how='git apply'\n"
        f"elif git apply --3way --check {d} 2>/dev/null; then git apply --3way --whitespace=nowarn {d} && how='git apply --3way'\n"
        f"elif {fuzz} --dry-run >/dev/null; then {fuzz} >/dev/null && "
        f"git add -A --pathspec-from-file={p} --pathspec-file-nul && how='patch --fuzz=5'\n"
        f"else {fuzz} >/dev/null 2>&1\n"  # for real, as the harness's last attempt: the tree it leaves is checked
        f"  if git apply --check --reverse {d} 2>/dev/null; then "
        f"git add -A --pathspec-from-file={p} --pathspec-file-nul && how='{ALREADY_APPLIED}'; fi\n"
        f"fi\n"
        f'[ -n "${{how:-}}" ] || exit 97\n'
        f'echo "{APPLIED}$how"'
    )  # fmt: skip


ALREADY_APPLIED = "git apply --check --reverse (already in the tree)"


def triage(text: str) -> tuple[str, str] | None:
    """The harness's advisory triage of a log, (reason, tier): ``infra_failure.classify_text``; None where the
    log matches no signature or the ``swebench`` package is absent."""
    try:
        return swebench().classify_text(text)
    except MissingExtra:
        return None


def run(sandbox: Sandbox, script: str, vdir: str, timeout_s: float) -> str:
    """Run the eval script as the harness does (``/bin/bash``) and return its log; ``Failed`` where it wrote none, or
    went past ``timeout_s`` (the verdict's log then holds what it wrote, and the harness's line)."""
    sandbox.write_file(f"{vdir}/eval.sh", script)
    log_path = f"{vdir}/test_output.txt"
    ran = sandbox.exec(  # as root: the harness's eval scripts install into the image's root-owned environment
        f"/bin/bash {vdir}/eval.sh 2>&1 | head -c {LOG_LIMIT} > {log_path}",
        timeout=timeout_s,
        workdir=sandbox.workdir,
        user="root",
    )
    try:
        log = sandbox.read_file(log_path).decode("utf-8", "replace")
    except FileNotFoundError:
        log = None
    if ran.timed_out:
        why = f"test run timed out after {timeout_s:g}s"
        raise fail(why, log=timed_out_log(log or ran.output, timeout_s), timed_out=True)
    if log is None:
        raise fail(f"the eval script wrote no log (exit {ran.exit_code}): {ran.output[-300:].strip()}")
    return log


def _outcome(status_map: dict[str, str], test_id: str) -> TestOutcome:
    resolve = swebench().resolve_case
    key = resolve(test_id, status_map) if resolve else (test_id if test_id in status_map else None)
    return _OUTCOME.get(status_map.get(key, ""), "missing") if key is not None else "missing"


def _why_invalid(log: str, status_map_any: bool, exit_code: int | None) -> str:
    """Which of ``get_logs_eval``'s checks turned the log down (for the reason line only; it decided already)."""
    h = swebench()
    for marker, why in h.invalid_markers.items():
        if marker in log:
            return why
    if not all(m in log for m in h.markers):
        return "no test output markers in the log (the eval script did not reach its test command)"
    if exit_code not in (None, 0) and status_map_any:
        return f"not trusted: the test command exited {exit_code} but its log records no failure"
    return "the log shows no test results and no sign that the test command ran"


def judge(task: Task, tests: TestSet, patch: str, log: str) -> Judged:
    """The verdict on a log, decided by ``get_logs_eval`` and ``get_eval_report``."""
    h = swebench()
    spec = h.make_test_spec(instance(task, tests))
    fd, path = tempfile.mkstemp(prefix="agentbon-swebench-", suffix=".log")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(log)
        status_map, found = h.get_logs_eval(spec, path)
        prediction = {"instance_id": spec.instance_id, "model_name_or_path": "agentbon", "model_patch": patch}
        report = h.get_eval_report(spec, prediction, path, include_tests_status=True)[spec.instance_id]
        triage = h.classify_logs(path) if not found else None
    finally:
        os.unlink(path)
    exit_code = h.parse_test_exit_code(log)
    outcomes = {t: _outcome(status_map, t) for t in tests.tests}
    read = Judged("fail", "", runner_exit_code=exit_code, log=log[-4000:], tests=outcomes)
    if not found:
        reason = _why_invalid(log, _parsed_any(spec, log), exit_code)
        if triage:
            reason += f" (the harness's triage: {triage[0]}, {triage[1]})"
        return read.replace(reason=reason)
    if report["resolved"]:
        return read.replace(status="pass", reason=f"resolved by the harness's rule ({len(tests.tests)} tests)")
    return read.replace(reason=_first_failure(report.get("tests_status", {}), outcomes))


def _parsed_any(spec: Any, log: str) -> bool:
    """Whether the parser finds any result in the log (to tell an exit-code contradiction from an empty log)."""
    parser = swebench().parsers.get(spec.log_parser)
    return bool(parser and parser(log, spec))


def _first_failure(tests_status: dict[str, dict[str, list[str]]], outcomes: dict[str, TestOutcome]) -> str:
    for role in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        failed = tests_status.get(role, {}).get("failure", [])
        if failed:
            more = sum(len(tests_status.get(r, {}).get("failure", [])) for r in ("FAIL_TO_PASS", "PASS_TO_PASS")) - 1
            first = failed[0]
            return f"{role} {first} {outcomes.get(first, 'missing')}" + (f" (+{more} more not passing)" if more else "")
    return "not resolved by the harness's rule"
