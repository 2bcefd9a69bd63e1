"""The test verifier: a candidate patch, a fresh sandbox, the tamper guard, the role's tests, a Verdict.

Steps, each in a sandbox opened fresh from the task image for this one verification:

1. apply the candidate with ``git apply --index`` (no fuzz, no ``--reject``; SWE-bench tasks with the harness's
   fallbacks, ``harness.apply_script``): a patch that does not apply is a clear ``fail`` with
   ``patch_applied=False``;
2. list what it changed (``git diff --cached --name-status``) and undo every protected change
   (``guard``), recording the paths in ``Verdict.tampered``; in the same engine call, compile the Python files it
   added or changed (``parsecheck``: a signal on the verdict, ``Verdict.parses``, that never decides it);
3. apply the role's test patch (hidden tests for the grade);
4. copy the runner scripts from ``verifiers/`` into a fresh directory outside the repository and run
   them; they write JUnit XML at an unpredictable path and a ``result.json`` with the exit code;
5. read the XML, cross-check the exit code, grade with SWE-bench semantics.

A ``swebench`` test set (an instance that carries the harness's eval script) replaces steps 3-5 with the
harness's own: its eval script applies the test patch and runs the tests, its log parser and resolution rule
decide (``harness``, docs/swebench.md).

A ``pass`` is checked a second way in a sandbox of its own (``_second_check``, docs/security.md, "Second check"):
the FAIL_TO_PASS tests run again by ``verifiers/second_check.py``; for a ``swebench`` test set with a pytest-family
log parser, after the eval script's setup part (environment, reset, test patch).

Whatever became of the run, the verdict of a non-empty patch carries the static scan's flags (``scan``:
suspicious code, large files, binary content), and a run that changed the interpreter's directories outside
the repository is flagged ``outside_write`` (docs/security.md).

A failed command is data; a sandbox that is gone (``InfraError``) makes an ``infra_error`` verdict.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import secrets
import shlex
import time
from pathlib import Path
from typing import cast

from agentbon.config import VerifyConfig
from agentbon.diffs import files_touched
from agentbon.errors import InfraError, SandboxDiskLimit
from agentbon.protocols import Sandbox, SandboxBackend
from agentbon.types import ExecResult, Flag, Role, Rollout, Task, TestSet, Verdict, patch_hash
from agentbon.verify import canary, evalscript, flaky, guard, harness, parsecheck, second
from agentbon.verify.budget import HOUSEKEEPING_S, RUNNER_GRACE_S
from agentbon.verify.grading import crosscheck, grade, graded_ids
from agentbon.verify.junit import JUnitError, durations_for, outcomes_for, parse_junit
from agentbon.verify.scan import scan_patch

SCRIPTS = {
    "pytest": ("agentbon_supervise.py", "agentbon_canary.py", "run_pytest.py", "pytest_boot.py"),
    "unittest": ("agentbon_supervise.py", "agentbon_canary.py", "run_pytest.py", "run_unittest.py", "unittest_boot.py"),
    "command": ("agentbon_supervise.py", "run_command.py"),
}


def verifiers_dir() -> Path:
    """The runner scripts and critic prompts: the copy shipped in the package, else ``verifiers/`` beside it.

    An installed wheel carries them as ``agentbon/_verifiers`` (setup.py copies them in at build time);
    a source checkout or an editable install has only the top-level ``verifiers/`` folder.
    """
    shipped = os.environ.get("AGENTBON_VERIFIERS")  # the driver's copy, carried to this node (orchestrate/shipping.py)
    if shipped and (Path(shipped) / "agentbon_supervise.py").is_file():
        return Path(shipped)
    package = Path(__file__).resolve().parents[1]
    candidates = (package / "_verifiers", package.parent / "verifiers")
    for path in candidates:
        if (path / "agentbon_supervise.py").is_file():
            return path
    raise FileNotFoundError(
        f"agentbon's verifier scripts are missing (looked in {' and '.join(map(str, candidates))}); "
        "reinstall agentbon, or run it from a source checkout"
    )


def outside_write_flag(report: dict) -> Flag | None:
    """The ``outside_write`` flag for what the runner saw the test run change in the interpreter's directories
    outside the repository (``agentbon_supervise.OutsideWatch``; docs/security.md, "Writes outside the repository")."""
    changed = [str(p) for p in report.get("outside_changes") or []]
    if not changed:
        return None
    total = int(report.get("outside_changes_total") or len(changed))
    shown = ", ".join(changed[:3]) + (f" and {total - 3} more" if total > 3 else "")
    return Flag(
        kind="outside_write",
        detail=f"the test run changed {total} path(s) outside the repository: {shown}",
        paths=changed,
    )


class _Fail(Exception):
    """Ends one verification early with a verdict status and reason (not an error of agentbon)."""

    def __init__(self, reason: str, status: str = "fail", **fields: object):
        super().__init__(reason)
        self.reason, self.status, self.fields = reason, status, fields


def _decided_by_outcomes(tests: TestSet, judged: tuple[str, str, dict]) -> bool:
    """Whether a judged run's verdict is the one its test outcomes give (not forged, timed out, contradicted or
    otherwise not trusted): only then may another run's outcomes be added to it."""
    status, reason, fields = judged
    return "tests" in fields and grade(tests, fields["tests"]) == (status, reason)


class TestVerifier:
    """Verifies candidate patches with tests in fresh sandboxes (protocols.Verifier)."""

    __test__ = False

    def __init__(
        self,
        backend: SandboxBackend,
        config: VerifyConfig | None = None,
        labels: dict[str, str] | None = None,
        output_limit: int = 20_000,
    ):
        self.backend = backend
        self.config = config or VerifyConfig()
        self.labels = labels or {}
        self.output_limit = output_limit

    def with_labels(self, **labels: str) -> TestVerifier:
        """This verifier with more container labels (the orchestrator names the unit, so a dead one's container
        can be reaped); it shares the backend."""
        other = copy.copy(self)
        other.labels = {**self.labels, **labels}
        return other

    def verify(self, task: Task, rollout: Rollout, role: Role) -> Verdict:
        """Run the role's tests on the rollout's patch."""
        tests = task.evidence_tests if role == "evidence" else task.grade
        base = Verdict(
            run_id=rollout.run_id,
            task_id=task.task_id,
            rollout_id=rollout.rollout_id,
            role=role,
            status="undecided",
            patch_hash=patch_hash(rollout.patch),
        )
        if tests.empty:
            return base.model_copy(update={"reason": f"no {role} tests: tests cannot decide"})
        if tests.runner == "swebench":
            problem = harness.check(tests)  # MissingExtra when the swebench package is absent
            if problem:
                return base.model_copy(update={"status": "infra_error", "reason": f"task error: {problem}"})
        return self._verify(task, tests, rollout.patch, base)

    def _verify(self, task: Task, tests: TestSet, patch: str, base: Verdict) -> Verdict:
        started = time.monotonic()
        labels = {**self.labels, "role": "verify"}
        state: dict[str, object] = {"tampered": []}
        try:
            with self.backend.open(task, labels) as sandbox:
                status, reason, fields = self._run(sandbox, task, tests, patch, state)
            if status == "pass":  # in a sandbox of its own, after the first is gone
                status, reason, fields = self._second_check(task, tests, patch, (status, reason, fields))
        except _Fail as f:
            status, reason, fields = f.status, f.reason, f.fields
        except SandboxDiskLimit as e:  # what ran in it filled the disk: the candidate's doing (docs/failure-taxonomy.md)
            status, reason, fields = "fail", f"the sandbox was stopped at its disk limit: {e}", {}
        except (InfraError, ConnectionError) as e:
            status, reason, fields = "infra_error", f"{type(e).__name__}: {e}", {}
        if state.get("applied_with"):  # the strict apply failed; the harness's fallback took it
            reason = f"{reason} (the patch applied only with {state['applied_with']}, as the harness applies it)"
        update = {"status": status, "reason": reason, "tampered": state["tampered"], **fields}
        if state.get("parses") is not None:
            update.update(parses=state["parses"], parse_errors=state["parse_errors"])
        # The static scan's flags, whatever became of the run (docs/security.md, "Static scan").
        scanned = scan_patch(patch, self.config.max_file_bytes, guard.task_files(task)) if patch.strip() else []
        update["flags"] = [*scanned, *update.get("flags", [])]
        if state["tampered"]:
            undone = cast(list[str], state["tampered"])
            detail = f"{len(undone)} test or runner file(s) changed by the patch, undone before the tests ran"
            update["flags"].insert(0, Flag(kind="tampered", detail=detail, paths=undone))
        update["duration_s"] = round(time.monotonic() - started, 3)
        return base.model_copy(update=update)

    # ------------------------------------------------------------------------------------ steps
    def _sh(self, sandbox: Sandbox, command: str, timeout: float = HOUSEKEEPING_S) -> ExecResult:
        # Housekeeping runs as root; the tests do not (_run_tests; docs/security.md, "Sandbox hardening").
        return sandbox.exec(command, timeout=timeout, workdir=sandbox.workdir, user="root")

    def _run(self, sandbox: Sandbox, task: Task, tests: TestSet, patch: str, state: dict) -> tuple[str, str, dict]:
        vdir = self._new_vdir(sandbox)
        if patch.strip():
            self._apply_candidate(sandbox, task, patch, vdir, state)
        treat = flaky.treatment(tests, self.config.flaky, self.config.flaky_runs)
        notes = dict(treat.notes)
        if tests.runner == "swebench":  # the harness's eval script applies the test patch itself
            status, reason, fields = self._run_harness(sandbox, task, treat.graded, patch, vdir)
            return status, reason, {**fields, "flaky": notes} if notes else fields
        self._apply_tests(sandbox, tests, vdir)
        activate = task.kind == "swebench"
        judged = self._run_graded(sandbox, treat, vdir, activate)
        if treat.rerun:
            judged = self._rerun_flaky(sandbox, treat, vdir, activate, judged, notes)
        if not sandbox.isolation.startswith("docker"):  # a container goes with its files
            self._sh(sandbox, f"rm -rf {vdir}")
        status, reason, fields = judged
        return status, reason, {**fields, "flaky": notes} if notes else fields

    def _run_graded(self, sandbox: Sandbox, treat: flaky.Treatment, vdir: str, activate: bool) -> tuple[str, str, dict]:
        """Run the graded tests and judge them: in one runner call, or with ``verify.fail_to_pass_first`` the
        FAIL_TO_PASS tests first and the PASS_TO_PASS ones only where no stable FAIL_TO_PASS test failed
        (docs/estimators.md, "Staged verification"). The verdict is the one a single run would give; what the
        early stop left unrun is in ``not_run``."""
        graded = treat.graded
        staged = self.config.fail_to_pass_first and graded.runner in ("pytest", "unittest")
        if not (staged and graded.fail_to_pass and graded.pass_to_pass):
            return self._run_judged(sandbox, graded, vdir, activate)
        first = graded.model_copy(update={"pass_to_pass": []})
        status, reason, fields = self._run_judged(sandbox, first, vdir, activate)
        outcomes: dict = fields.get("tests") or {}
        if not _decided_by_outcomes(first, (status, reason, fields)) or any(outcomes.get(t) != "passed" for t in first.fail_to_pass if t not in treat.rerun):
            # Failed, or not trusted (a fail too): no PASS_TO_PASS outcome could make it a pass.
            skipped = len(graded.pass_to_pass)
            return status, f"{reason} (FAIL_TO_PASS first: {skipped} PASS_TO_PASS test(s) not run)", {
                **fields, "not_run": list(graded.pass_to_pass)
            }
        rest = graded.model_copy(update={"fail_to_pass": []})
        then_status, then_reason, then = self._run_judged(sandbox, rest, vdir, activate)
        merged = {
            **then,
            "tests": {**outcomes, **then.get("tests", {})},
            "test_s": {**fields.get("test_s", {}), **then.get("test_s", {})},
            "flags": [*fields.get("flags", []), *then.get("flags", [])],
        }
        if not _decided_by_outcomes(rest, (then_status, then_reason, then)):
            return then_status, then_reason, merged  # the second call not trusted: it decides, as a failed run
        status, reason = grade(graded, merged["tests"])
        return status, reason, merged

    def _run_judged(self, sandbox: Sandbox, tests: TestSet, vdir: str, activate: bool) -> tuple[str, str, dict]:
        report, junit, plan = self._run_tests(sandbox, tests, vdir, activate=activate)
        return self._judge(tests, report, junit, plan)

    def _rerun_flaky(
        self, sandbox: Sandbox, treat: flaky.Treatment, vdir: str, activate: bool, first: tuple[str, str, dict],
        notes: dict[str, str],
    ) -> tuple[str, str, dict]:
        """Run the graded flaky tests again, in this sandbox, until each is decided k of m (verify/flaky.py); say in
        ``notes`` how each was decided.

        Only after a run whose verdict came from its test outcomes (not forged, timed out or contradicted), and
        only while the stable tests all passed (else the verdict is ``fail`` whatever the flaky ones do). A rerun
        that is not trusted decides the verdict as the first run's would."""
        status, reason, fields = first
        if fields.get("not_run"):  # a stable FAIL_TO_PASS test failed, and the run stopped there
            notes.update({t: "not rerun: a stable FAIL_TO_PASS test failed" for t in treat.rerun})
            return first
        outcomes = fields.get("tests")
        graded = treat.graded
        passes, runs = self.config.flaky_passes, self.config.flaky_runs
        if outcomes is None or not _decided_by_outcomes(graded, first):
            notes.update({t: "not rerun: the first run was not trusted" for t in treat.rerun})
            return first
        stable = [t for t in graded.tests if t not in treat.rerun]
        if any(outcomes.get(t) != "passed" for t in stable):
            notes.update({t: "not rerun: a stable test did not pass" for t in treat.rerun})
            return first
        seen: list[dict] = [outcomes]
        while ids := flaky.undecided(seen, treat.rerun, runs, passes):
            subset = graded.model_copy(
                update={
                    "fail_to_pass": [t for t in graded.fail_to_pass if t in ids],
                    "pass_to_pass": [t for t in graded.pass_to_pass if t in ids],
                }
            )
            again = self._run_judged(sandbox, subset, vdir, activate)
            if not _decided_by_outcomes(subset, again):
                flags = [*fields.get("flags", []), *again[2].get("flags", [])]
                notes.update({t: f"rerun not trusted: {again[1]}" for t in ids})
                return "fail", f"flaky rerun: {again[1]}", {**fields, "flags": flags, "log": again[2].get("log", "")}
            seen.append(again[2]["tests"])
        decided, how = flaky.decide(seen, treat.rerun, passes)
        notes.update(how)
        merged = {**outcomes, **decided}
        status, reason = grade(graded, merged)
        return status, reason, {**fields, "tests": merged}

    def _new_vdir(self, sandbox: Sandbox) -> str:
        """A fresh directory for the verifier's files. Outside the repository, in the sandbox's temp dir (a process
        sandbox confines files to its own tree)."""
        vdir_sh = f'"${{TMPDIR:-/tmp}}/agentbon-verify-{secrets.token_hex(8)}"'
        # Root's and read-only to the tests, but for out/, where the runner writes its results.
        made = self._sh(sandbox, f'd={vdir_sh} && mkdir -p "$d/out" && chmod 1777 "$d/out" && echo "$d"')
        vdir = made.output.strip().splitlines()[-1] if made.output.strip() else ""
        if made.exit_code != 0 or not vdir.startswith("/") or any(c in vdir for c in " '\"$`\\"):
            how = "timed out" if made.timed_out else f"exit {made.exit_code}"
            raise _Fail(
                f"cannot prepare the sandbox ({how} after {made.duration_s:.1f}s): {made.output[-300:].strip() or 'no output'}",
                status="infra_error",
            )
        return vdir

    def _apply_tests(self, sandbox: Sandbox, tests: TestSet, vdir: str) -> None:
        if tests.patch:
            sandbox.write_file(f"{vdir}/tests.diff", tests.patch)
            applied = self._sh(sandbox, f"git apply --whitespace=nowarn {vdir}/tests.diff")
            if applied.exit_code != 0:
                # The guard restored every file the test patch names, so this is the task's fault.
                raise _Fail(f"task error: test patch does not apply: {applied.output.strip()[-300:]}", "infra_error")

    def _apply_candidate(
        self, sandbox: Sandbox, task: Task, patch: str, vdir: str, state: dict, parse: bool = True
    ) -> None:
        sandbox.write_file(f"{vdir}/candidate.diff", patch)
        apply = f"git apply --index --whitespace=nowarn {vdir}/candidate.diff || exit 97"
        if task.kind == "swebench":  # as the harness applies predictions: with its fallbacks (docs/swebench.md)
            sandbox.write_file(f"{vdir}/paths", "\0".join(files_touched(patch)))
            apply = harness.apply_script(f"{vdir}/candidate.diff", f"{vdir}/paths")
        # Lists go to files (exec output is capped; a patch may touch thousands of files). Exit 97: no apply.
        applied = self._sh(
            sandbox,
            f"{{\n{apply}\n}} && git diff --cached --name-status --no-renames -z HEAD > {vdir}/changed && "
            f"git ls-tree --name-only -z HEAD > {vdir}/top"
            + (f" && {{\n{parsecheck.script(f'{vdir}/changed')}\n}}" if parse else ""),
        )
        if applied.exit_code == 97:
            first = next((ln for ln in applied.output.splitlines() if ln.strip()), "")
            raise _Fail(f"patch does not apply: {first[:200]}", patch_applied=False, log=applied.output[-4000:])
        if applied.exit_code != 0:
            raise _Fail(f"cannot list the patch's changes: {applied.output[-300:]}", status="infra_error")
        how = [ln[len(harness.APPLIED) :] for ln in applied.output.splitlines() if ln.startswith(harness.APPLIED)]
        if how and how[-1] != "git apply":
            state["applied_with"] = how[-1]
        fields = sandbox.read_file(f"{vdir}/changed").decode("utf-8", "replace").split("\0")
        changes = [(fields[i][:1], fields[i + 1]) for i in range(0, len(fields) - 1, 2)]
        protected = guard.task_files(task)
        top: set[str] | None = None
        flagged = []
        for status, path in changes:
            sectioned = Path(path).name in guard.SECTIONED_CONFIG and path not in protected
            if sectioned:
                if self._section_changed(sandbox, status, path, vdir):
                    flagged.append((status, path))
                continue
            if not guard.why_protected(path, protected) and status == "A" and guard.may_shadow(path):
                if top is None:  # read the base's top-level names only when a new module might shadow one
                    top = set(sandbox.read_file(f"{vdir}/top").decode("utf-8", "replace").split("\0"))
                if guard.shadows_module(path, top):
                    flagged.append((status, path))
            elif guard.why_protected(path, protected):
                flagged.append((status, path))
        parsed = parsecheck.read(applied.output, ignore=frozenset(p for _, p in flagged))
        state["parses"], state["parse_errors"] = parsed.parses, parsed.errors
        if flagged:
            state["tampered"] = [p for _, p in flagged]
            undone = self._sh(sandbox, guard.restore_script(flagged))
            if undone.exit_code != 0:
                raise _Fail(f"cannot undo test-file changes: {undone.output[-300:]}", status="infra_error")

    def _run_harness(
        self, sandbox: Sandbox, task: Task, tests: TestSet, patch: str, vdir: str
    ) -> tuple[str, str, dict]:
        log, why, timed_out = harness.run(sandbox, harness.eval_script(task, tests), vdir, self.config.timeout_s)
        if not sandbox.isolation.startswith("docker"):  # a container goes with its files
            self._sh(sandbox, f"rm -rf {vdir}")
        if timed_out:
            raise _Fail(why, log=log, timed_out=True)
        if log is None:
            raise _Fail(why)
        return harness.judge(task, tests, patch, log)

    def _section_changed(self, sandbox: Sandbox, status: str, path: str, vdir: str) -> bool:
        old = new = None
        if status != "A":
            self._sh(sandbox, f"git show HEAD:{shlex.quote(path)} > {vdir}/base.cfg")
            old = sandbox.read_file(f"{vdir}/base.cfg").decode("utf-8", "replace")
        if status != "D":
            new = sandbox.read_file(path).decode("utf-8", "replace")
        return guard.pytest_section_changed(path, old, new)

    def _run_tests(
        self, sandbox: Sandbox, tests: TestSet, vdir: str, activate: bool = False
    ) -> tuple[dict, bytes | None, canary.Plan | None]:
        """Run ``tests`` with agentbon's runner. ``activate``: a SWE-bench instance graded without the harness's
        script (a record with no ``eval_script``) runs in its image's ``testbed`` environment, as the harness
        runs it (``harness.ACTIVATE``)."""
        scripts = verifiers_dir()
        plan = canary.plan(tests.runner, tests.tests)  # docs/security.md, "Canaries"
        for name in SCRIPTS[tests.runner]:
            sandbox.write_file(f"{vdir}/{name}", (scripts / name).read_bytes())
        junit_path, result_path = f"{vdir}/out/{secrets.token_hex(12)}.xml", f"{vdir}/out/result.json"
        spec = {
            "ids": tests.tests,
            "command": tests.command,
            "junit": junit_path,
            "result": result_path,
            "timeout_s": self.config.timeout_s,
            "output_limit": self.output_limit,
            "plugins": list(dict.fromkeys([*tests.pytest_plugins, *self.config.pytest_plugins])),
            "plugin_autoload": (
                tests.pytest_plugin_autoload
                if self.config.pytest_plugin_autoload is None
                else self.config.pytest_plugin_autoload
            ),
            "canaries": plan.spec() if plan else None,
        }
        sandbox.write_file(f"{vdir}/spec.json", json.dumps(spec))
        script = {"pytest": "run_pytest.py", "unittest": "run_unittest.py", "command": "run_command.py"}[tests.runner]
        command = f'PY=$(command -v python3 || command -v python) && exec "$PY" -I {vdir}/{script} {vdir}/spec.json'
        command = f"{harness.ACTIVATE}{command}" if activate else command
        # As the sandbox's user.
        ran = sandbox.exec(command, timeout=self.config.timeout_s + RUNNER_GRACE_S, workdir=sandbox.workdir)
        if ran.timed_out:
            raise _Fail("test run timed out", log=harness.timed_out_log(ran.output, self.config.timeout_s), timed_out=True)
        report = self._read_json(sandbox, result_path)
        if report is None:
            raise _Fail(f"the test runner reported nothing (exit {ran.exit_code}; killed?)", log=ran.output[-4000:])
        junit = self._read(sandbox, junit_path) if report.get("junit_exists") else None
        return report, junit, plan

    def _read(self, sandbox: Sandbox, path: str) -> bytes | None:
        try:
            return sandbox.read_file(path)
        except InfraError:
            raise
        except Exception:  # a missing file is data here; the sandbox being gone is not
            return None

    def _read_json(self, sandbox: Sandbox, path: str) -> dict | None:
        data = self._read(sandbox, path)
        try:
            return json.loads(data) if data else None
        except ValueError:
            return None

    def _judge(
        self, tests: TestSet, report: dict, junit: bytes | None, plan: canary.Plan | None = None
    ) -> tuple[str, str, dict]:
        code = report.get("exit_code")
        fields: dict = {"runner_exit_code": code, "log": str(report.get("output", ""))[-4000:]}
        outside = outside_write_flag(report)
        if outside:
            fields.setdefault("flags", []).append(outside)
        if report.get("timed_out"):
            fields.update(log=harness.timed_out_log(fields["log"], self.config.timeout_s), timed_out=True)
            return "fail", f"test run timed out after {self.config.timeout_s:g}s", fields
        forged = self._forged(tests, report, junit, plan, fields)
        if forged:
            return "fail", forged, fields
        if report.get("changed_during_run"):
            return "fail", f"not trusted: files changed during the run: {report['changed_during_run'][:3]}", fields
        if junit is None:
            why = "runner exited 0 but wrote no JUnit XML" if code == 0 else f"no JUnit XML (runner exit {code})"
            return "fail", why, fields
        try:
            cases = parse_junit(junit)
        except JUnitError as e:
            return "fail", f"not trusted: {e}", fields
        fields["tests"] = outcomes_for(graded_ids(tests), cases, tests.runner)
        fields["test_s"] = durations_for(graded_ids(tests), cases, tests.runner)
        contradiction = crosscheck(tests.runner, code, cases)
        if contradiction:
            return "fail", f"not trusted: {contradiction}", fields
        status, reason = grade(tests, fields["tests"])
        return status, reason, fields

    def _forged(self, tests: TestSet, report: dict, junit: bytes | None, plan: canary.Plan | None, fields: dict) -> str:
        """The reason when the canaries did not come out as planted (flagged ``forged`` in ``fields``), else ''."""
        if plan is None:
            return ""
        try:
            cases = parse_junit(junit) if junit is not None else None
        except JUnitError:
            cases = None  # judged below as not trusted; the exit code and the files are still checked
        graded = outcomes_for(graded_ids(tests), cases, tests.runner) if cases is not None else {}
        problems = canary.problems(plan, cases, report.get("exit_code"), report.get("canaries_changed") or [], graded)
        if not problems:
            return ""
        if cases is not None:
            fields["tests"] = outcomes_for(graded_ids(tests), cases, tests.runner)
        detail = problems[0] + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
        fields.setdefault("flags", []).append(Flag(kind="forged", detail=detail))
        return f"forged: {detail}"

    # ------------------------------------------------------------------------------------ second check
    def _second_check(
        self, task: Task, tests: TestSet, patch: str, first: tuple[str, str, dict]
    ) -> tuple[str, str, dict]:
        """The FAIL_TO_PASS tests the first run passed, run again independently (docs/security.md, "Second check").

        A sandbox of its own: the candidate applied (and guarded) and the test patch applied again, nothing of
        the first run's sandbox, scripts or files. A disagreement fails the verdict and flags it."""
        status, reason, fields = first
        harnessed = tests.runner == "swebench"
        # A harness instance is driven by what its log parser reads (docs/security.md, "Second check").
        runner = harness.second_runner(tests) if harnessed else tests.runner
        ids = second.ids_to_check(tests, fields.get("tests", {}), runner)
        if self.config.flaky != "strict":  # decided k of m already; one more run of its own would prove nothing
            ids = [t for t in ids if t not in tests.flaky]
        script = harness.eval_script(task, tests) if harnessed and ids else ""
        setup = evalscript.setup_part(script) if script else None
        if not ids or (harnessed and setup is None):
            return first
        try:
            with self.backend.open(task, {**self.labels, "role": "verify"}) as sandbox:
                vdir = self._new_vdir(sandbox)
                if patch.strip():
                    self._apply_candidate(sandbox, task, patch, vdir, {"tampered": []}, parse=False)  # checked once
                if not harnessed:  # the eval script's setup part applies the harness's test patch
                    self._apply_tests(sandbox, tests, vdir)
                answer = self._ask_second(
                    sandbox, tests, ids, vdir, setup, activate=task.kind == "swebench", runner=runner,
                    command=evalscript.test_command(script) or "",
                )  # fmt: skip
                if not sandbox.isolation.startswith("docker"):  # a container goes with its files
                    self._sh(sandbox, f"rm -rf {vdir}")
        except _Fail as f:
            raise _Fail(f"second check: {f.reason}", status="infra_error") from f
        except (InfraError, ConnectionError) as e:
            raise _Fail(f"second check: {type(e).__name__}: {e}", status="infra_error") from e
        problems = [answer.problem] if answer.problem else second.disagreements(ids, answer)
        if not problems:
            return status, f"{reason}; the second check agrees on {len(ids)} FAIL_TO_PASS", fields
        timed = f" (timed out after {self.config.timeout_s:g}s)" if answer.timed_out else ""
        detail = f"first run passed, second check saw {problems[0]}{timed}"
        detail += f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        flags = [*fields.get("flags", []), Flag(kind="disagreement", detail=detail)]
        log = f"{fields.get('log', '')}\n--- second check ---\n{answer.output}"[-4000:]
        return "fail", f"not trusted: second check: {problems[0]}{timed}", {**fields, "flags": flags, "log": log}

    def _ask_second(
        self,
        sandbox: Sandbox,
        tests: TestSet,
        ids: list[str],
        vdir: str,
        setup: str | None = None,
        activate: bool = False,
        runner: str | None = None,
        command: str = "",
    ) -> second.Answer:
        """Run the driver and read its answer. ``setup``: a harness eval script's part before its test command,
        run first in the same shell (as root, as the harness runs it, its output to a file), so that the driver
        starts in the activated environment with the test patch applied."""
        scripts = verifiers_dir()
        for name in second.SCRIPTS:
            sandbox.write_file(f"{vdir}/{name}", (scripts / name).read_bytes())
        # The driver deletes its spec before any code of the repository runs: a folder it may delete in.
        made = self._sh(sandbox, f"mkdir -m 0777 {vdir}/in")
        if made.exit_code != 0:
            raise _Fail(f"cannot prepare the second check: {made.output[-300:]}", status="infra_error")
        nonce = second.new_nonce()
        spec_path = f"{vdir}/in/{secrets.token_hex(8)}.json"
        plugins = list(dict.fromkeys([*tests.pytest_plugins, *self.config.pytest_plugins]))
        autoload = (
            tests.pytest_plugin_autoload
            if self.config.pytest_plugin_autoload is None
            else self.config.pytest_plugin_autoload
        )
        if setup is not None:  # the harness's test command runs with the environment's plugins
            autoload = True
        spec = second.spec(tests, ids, nonce, self.config.timeout_s, plugins, autoload, runner=runner, command=command)
        sandbox.write_file(spec_path, json.dumps(spec))
        command = f'PY=$(command -v python3 || command -v python) && exec "$PY" -I {vdir}/second_check.py {spec_path}'
        if setup is None:
            # as the sandbox's user; a SWE-bench record without the harness's script in its testbed environment
            command = f"{harness.ACTIVATE}{command}" if activate else command
            ran = sandbox.exec(command, timeout=self.config.timeout_s + RUNNER_GRACE_S, workdir=sandbox.workdir)
            return second.read(ran.output, nonce, ids)
        script = f"exec 3>&1 >{vdir}/setup.log 2>&1\n{setup}set +x\nexec 1>&3 2>&1 3>&-\n{command}\n"
        sandbox.write_file(f"{vdir}/second.sh", script)
        timeout = self.config.timeout_s + HOUSEKEEPING_S + RUNNER_GRACE_S
        ran = sandbox.exec(f"/bin/bash {vdir}/second.sh", timeout=timeout, workdir=sandbox.workdir, user="root")
        answer = second.read(ran.output, nonce, ids)
        if answer.problem:  # say what the setup part printed last (an environment that did not activate, ...)
            tail = (self._read(sandbox, f"{vdir}/setup.log") or b"").decode("utf-8", "replace")[-1500:]
            return dataclasses.replace(answer, output=f"{ran.output[-1500:]}\n--- eval script setup ---\n{tail}")
        return answer
