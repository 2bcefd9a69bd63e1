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

Steps 1-3 are ``verify/candidate.py``; step 5 is ``verify/judged.py``'s pure ``judge_run``, which makes the
``Judged`` record the steps hand on (status, reason and the verdict fields a run sets).

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
import time
from pathlib import Path
from typing import Any

from agentbon.config import VerifyConfig
from agentbon.errors import InfraError, SandboxDiskLimit
from agentbon.protocols import Sandbox, SandboxBackend
from agentbon.types import Flag, Role, Rollout, Task, TestOutcome, TestSet, Verdict, patch_hash
from agentbon.verify import canary, evalscript, flaky, guard, harness, second
from agentbon.verify.budget import HOUSEKEEPING_S, RUNNER_GRACE_S
from agentbon.verify.candidate import Applied, apply_candidate, apply_tests, clean_up, new_vdir, sh, undo
from agentbon.verify.grading import grade
from agentbon.verify.judged import Failed, Judged, fail, judge_run, outside_write_flag, timed_out_log
from agentbon.verify.scan import scan_patch

__all__ = ["TestVerifier", "outside_write_flag", "verifiers_dir"]

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
                update = {"status": "infra_error", "reason": f"task error: {problem}", "error_kind": "VerifyInfra"}
                return base.model_copy(update=update)
        return self._verify(task, tests, rollout.patch, base)

    def _verify(self, task: Task, tests: TestSet, patch: str, base: Verdict) -> Verdict:
        started = time.monotonic()
        applied = Applied()
        try:
            with self.backend.open(task, {**self.labels, "role": "verify"}) as sandbox:
                vdir = new_vdir(sandbox)
                if patch.strip():
                    applied = apply_candidate(sandbox, task, patch, vdir)
                    undo(sandbox, applied)
                judged = self._run(sandbox, task, tests, patch, vdir)
            if judged.status == "pass":  # in a sandbox of its own, after the first is gone
                judged = self._second_check(task, tests, patch, judged)
        except Failed as f:
            judged = f.judged
        except SandboxDiskLimit as e:  # what ran in it filled the disk: the candidate's doing (docs/failure-taxonomy.md)
            judged = Judged("fail", f"the sandbox was stopped at its disk limit: {e}")
        except (InfraError, ConnectionError) as e:
            judged = Judged("infra_error", f"{type(e).__name__}: {e}", error_kind=type(e).__name__)
        update = judged.verdict_fields()
        if applied.applied_with:  # the strict apply failed; the harness's fallback took it
            update["reason"] += f" (the patch applied only with {applied.applied_with}, as the harness applies it)"
        if applied.parses is not None:
            update.update(parses=applied.parses, parse_errors=applied.parse_errors)
        # The static scan's flags, whatever became of the run (docs/security.md, "Static scan").
        flags = scan_patch(patch, self.config.max_file_bytes, guard.task_files(task)) if patch.strip() else []
        if applied.tampered:
            detail = f"{len(applied.tampered)} test or runner file(s) changed by the patch, undone before the tests ran"
            flags.insert(0, Flag(kind="tampered", detail=detail, paths=applied.tampered))
        update.update(tampered=applied.tampered, flags=[*flags, *judged.flags])
        update["duration_s"] = round(time.monotonic() - started, 3)
        return base.model_copy(update=update)

    # ------------------------------------------------------------------------------------ steps
    def _run(self, sandbox: Sandbox, task: Task, tests: TestSet, patch: str, vdir: str) -> Judged:
        """The role's tests on the applied candidate: the harness's eval script, or agentbon's runner (staged, and
        flaky tests rerun, as configured)."""
        treat = flaky.treatment(tests, self.config.flaky, self.config.flaky_runs)
        if tests.runner == "swebench":  # the harness's eval script applies the test patch itself
            return self._run_harness(sandbox, task, treat.graded, patch, vdir).replace(flaky=dict(treat.notes))
        apply_tests(sandbox, tests, vdir)
        activate = task.kind == "swebench"
        judged = self._run_graded(sandbox, treat, vdir, activate).replace(flaky=dict(treat.notes))
        if treat.rerun:
            judged = self._rerun_flaky(sandbox, treat, vdir, activate, judged)
        clean_up(sandbox, vdir)
        return judged

    def _run_graded(self, sandbox: Sandbox, treat: flaky.Treatment, vdir: str, activate: bool) -> Judged:
        """Run the graded tests and judge them: in one runner call, or with ``verify.fail_to_pass_first`` the
        FAIL_TO_PASS tests first and the PASS_TO_PASS ones only where no stable FAIL_TO_PASS test failed
        (docs/estimators.md, "Staged verification"). The verdict is the one a single run would give; what the
        early stop left unrun is in ``not_run``."""
        graded = treat.graded
        staged = self.config.fail_to_pass_first and graded.runner in ("pytest", "unittest")
        if not (staged and graded.fail_to_pass and graded.pass_to_pass):
            return self._run_judged(sandbox, graded, vdir, activate)
        first = graded.model_copy(update={"pass_to_pass": []})
        judged = self._run_judged(sandbox, first, vdir, activate)
        outcomes = judged.tests or {}
        stable_failed = any(outcomes.get(t) != "passed" for t in first.fail_to_pass if t not in treat.rerun)
        if not judged.by_outcomes(first) or stable_failed:
            # Failed, or not trusted (a fail too): no PASS_TO_PASS outcome could make it a pass.
            skipped = len(graded.pass_to_pass)
            return judged.replace(
                reason=f"{judged.reason} (FAIL_TO_PASS first: {skipped} PASS_TO_PASS test(s) not run)",
                not_run=tuple(graded.pass_to_pass),
            )
        rest = graded.model_copy(update={"fail_to_pass": []})
        then = self._run_judged(sandbox, rest, vdir, activate)
        merged = then.replace(
            tests={**outcomes, **(then.tests or {})},
            test_s={**judged.test_s, **then.test_s},
            flags=(*judged.flags, *then.flags),
        )
        if not then.by_outcomes(rest):
            return merged  # the second call not trusted: it decides, as a failed run
        status, reason = grade(graded, merged.tests or {})
        return merged.replace(status=status, reason=reason)

    def _rerun_flaky(self, sandbox: Sandbox, treat: flaky.Treatment, vdir: str, activate: bool, first: Judged) -> Judged:
        """Run the graded flaky tests again, in this sandbox, until each is decided k of m (verify/flaky.py); say in
        ``flaky`` how each was decided.

        Only after a run whose verdict came from its test outcomes (not forged, timed out or contradicted), and
        only while the stable tests all passed (else the verdict is ``fail`` whatever the flaky ones do). A rerun
        that is not trusted decides the verdict as the first run's would."""

        def noted(judged: Judged, how: dict[str, str]) -> Judged:
            return judged.replace(flaky={**first.flaky, **how})

        if first.not_run:  # a stable FAIL_TO_PASS test failed, and the run stopped there
            return noted(first, dict.fromkeys(treat.rerun, "not rerun: a stable FAIL_TO_PASS test failed"))
        graded = treat.graded
        if first.tests is None or not first.by_outcomes(graded):
            return noted(first, dict.fromkeys(treat.rerun, "not rerun: the first run was not trusted"))
        outcomes = first.tests
        if any(outcomes.get(t) != "passed" for t in graded.tests if t not in treat.rerun):
            return noted(first, dict.fromkeys(treat.rerun, "not rerun: a stable test did not pass"))
        passes, runs = self.config.flaky_passes, self.config.flaky_runs
        seen: list[dict[str, TestOutcome]] = [outcomes]
        while ids := flaky.undecided(seen, treat.rerun, runs, passes):
            subset = graded.model_copy(
                update={
                    "fail_to_pass": [t for t in graded.fail_to_pass if t in ids],
                    "pass_to_pass": [t for t in graded.pass_to_pass if t in ids],
                }
            )
            again = self._run_judged(sandbox, subset, vdir, activate)
            if again.tests is None or not again.by_outcomes(subset):
                failed = first.replace(status="fail", reason=f"flaky rerun: {again.reason}", log=again.log)
                return noted(failed.flagged(*again.flags), dict.fromkeys(ids, f"rerun not trusted: {again.reason}"))
            seen.append(again.tests)
        decided, how = flaky.decide(seen, treat.rerun, passes)
        merged = {**outcomes, **decided}
        status, reason = grade(graded, merged)
        return noted(first.replace(status=status, reason=reason, tests=merged), how)

    def _run_harness(self, sandbox: Sandbox, task: Task, tests: TestSet, patch: str, vdir: str) -> Judged:
        try:
            log = harness.run(sandbox, harness.eval_script(task, tests), vdir, self.config.timeout_s)
        except Failed:
            clean_up(sandbox, vdir)
            raise
        clean_up(sandbox, vdir)
        return harness.judge(task, tests, patch, log)

    def _run_judged(self, sandbox: Sandbox, tests: TestSet, vdir: str, activate: bool) -> Judged:
        """Run ``tests`` with agentbon's runner and judge what it wrote. ``activate``: a SWE-bench instance graded
        without the harness's script (a record with no ``eval_script``) runs in its image's ``testbed`` environment,
        as the harness runs it (``harness.ACTIVATE``)."""
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
            "plugins": self._plugins(tests),
            "plugin_autoload": self._plugin_autoload(tests),
            "canaries": plan.spec() if plan else None,
        }
        sandbox.write_file(f"{vdir}/spec.json", json.dumps(spec))
        script = {"pytest": "run_pytest.py", "unittest": "run_unittest.py", "command": "run_command.py"}[tests.runner]
        command = f'PY=$(command -v python3 || command -v python) && exec "$PY" -I {vdir}/{script} {vdir}/spec.json'
        command = f"{harness.ACTIVATE}{command}" if activate else command
        # As the sandbox's user.
        ran = sandbox.exec(command, timeout=self.config.timeout_s + RUNNER_GRACE_S, workdir=sandbox.workdir)
        if ran.timed_out:
            raise fail("test run timed out", log=timed_out_log(ran.output, self.config.timeout_s), timed_out=True)
        report = _read_json(sandbox, result_path)
        if report is None:
            raise fail(f"the test runner reported nothing (exit {ran.exit_code}; killed?)", log=ran.output[-4000:])
        junit = _read(sandbox, junit_path) if report.get("junit_exists") else None
        return judge_run(tests, report, junit, plan, self.config.timeout_s)

    def _plugins(self, tests: TestSet) -> list[str]:
        return list(dict.fromkeys([*tests.pytest_plugins, *self.config.pytest_plugins]))

    def _plugin_autoload(self, tests: TestSet) -> bool:
        configured = self.config.pytest_plugin_autoload
        return tests.pytest_plugin_autoload if configured is None else configured

    # ------------------------------------------------------------------------------------ second check
    def _second_check(self, task: Task, tests: TestSet, patch: str, first: Judged) -> Judged:
        """The FAIL_TO_PASS tests the first run passed, run again independently (docs/security.md, "Second check").

        A sandbox of its own: the candidate applied (and guarded) and the test patch applied again, nothing of
        the first run's sandbox, scripts or files. A disagreement fails the verdict and flags it."""
        harnessed = tests.runner == "swebench"
        # A harness instance is driven by what its log parser reads (docs/security.md, "Second check").
        runner = harness.second_runner(tests) if harnessed else tests.runner
        ids = second.ids_to_check(tests, first.tests or {}, runner)
        if self.config.flaky != "strict":  # decided k of m already; one more run of its own would prove nothing
            ids = [t for t in ids if t not in tests.flaky]
        script = harness.eval_script(task, tests) if harnessed and ids else ""
        setup = evalscript.setup_part(script) if script else None
        if not ids or (harnessed and setup is None):
            return first
        try:
            with self.backend.open(task, {**self.labels, "role": "verify"}) as sandbox:
                vdir = new_vdir(sandbox)
                if patch.strip():
                    undo(sandbox, apply_candidate(sandbox, task, patch, vdir, parse=False))  # compiled once already
                if not harnessed:  # the eval script's setup part applies the harness's test patch
                    apply_tests(sandbox, tests, vdir)
                answer = self._ask_second(
                    sandbox, tests, ids, vdir, setup, activate=task.kind == "swebench", runner=runner,
                    command=evalscript.test_command(script) or "",
                )  # fmt: skip
                clean_up(sandbox, vdir)
        except Failed as f:
            raise fail(f"second check: {f.judged.reason}", "infra_error", error_kind=f.judged.error_kind) from f
        except (InfraError, ConnectionError) as e:
            raise fail(f"second check: {type(e).__name__}: {e}", "infra_error", error_kind=type(e).__name__) from e
        problems = [answer.problem] if answer.problem else second.disagreements(ids, answer)
        if not problems:
            return first.replace(reason=f"{first.reason}; the second check agrees on {len(ids)} FAIL_TO_PASS")
        timed = f" (timed out after {self.config.timeout_s:g}s)" if answer.timed_out else ""
        detail = f"first run passed, second check saw {problems[0]}{timed}"
        detail += f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        log = f"{first.log}\n--- second check ---\n{answer.output}"[-4000:]
        reason = f"not trusted: second check: {problems[0]}{timed}"
        return first.flagged(Flag(kind="disagreement", detail=detail)).replace(status="fail", reason=reason, log=log)

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
        made = sh(sandbox, f"mkdir -m 0777 {vdir}/in")
        if made.exit_code != 0:
            raise fail(f"cannot prepare the second check: {made.output[-300:]}", "infra_error")
        nonce = second.new_nonce()
        spec_path = f"{vdir}/in/{secrets.token_hex(8)}.json"
        # The harness's test command runs with the environment's plugins.
        autoload = True if setup is not None else self._plugin_autoload(tests)
        spec = second.spec(
            tests, ids, nonce, self.config.timeout_s, self._plugins(tests), autoload, runner=runner, command=command
        )
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
            tail = (_read(sandbox, f"{vdir}/setup.log") or b"").decode("utf-8", "replace")[-1500:]
            return dataclasses.replace(answer, output=f"{ran.output[-1500:]}\n--- eval script setup ---\n{tail}")
        return answer


def _read(sandbox: Sandbox, path: str) -> bytes | None:
    try:
        return sandbox.read_file(path)
    except InfraError:
        raise
    except Exception:  # a missing file is data here; the sandbox being gone is not
        return None


def _read_json(sandbox: Sandbox, path: str) -> dict[str, Any] | None:
    data = _read(sandbox, path)
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None
