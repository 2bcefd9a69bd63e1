"""The test verifier: a candidate patch, a fresh sandbox, the tamper guard, the role's tests, a Verdict.

Steps, each in a sandbox opened fresh from the task image for this one verification:

1. apply the candidate with ``git apply --index`` (no fuzz, no ``--reject``): a patch that does not
   apply is a clear ``fail`` with ``patch_applied=False``;
2. list what it changed (``git diff --cached --name-status``) and undo every protected change
   (``guard``), recording the paths in ``Verdict.tampered``;
3. apply the role's test patch (hidden tests for the grade);
4. copy the runner scripts from ``verifiers/`` into a fresh directory outside the repository and run
   them; they write JUnit XML at an unpredictable path and a ``result.json`` with the exit code;
5. read the XML, cross-check the exit code, grade with SWE-bench semantics.

A ``swebench`` test set (an instance that carries the harness's eval script) replaces steps 3-5 with the
harness's own: its eval script applies the test patch and runs the tests, its log parser and resolution rule
decide (``harness``, docs/swebench.md).

A failed command is data; a sandbox that is gone (``InfraError``) makes an ``infra_error`` verdict.
"""

from __future__ import annotations

import copy
import json
import secrets
import shlex
import time
from pathlib import Path

from agentbon.config import VerifyConfig
from agentbon.errors import InfraError
from agentbon.protocols import Sandbox, SandboxBackend
from agentbon.types import Role, Rollout, Task, TestSet, Verdict, patch_hash
from agentbon.verify import guard, harness
from agentbon.verify.cache import VerdictCache
from agentbon.verify.grading import crosscheck, grade, graded_ids
from agentbon.verify.junit import JUnitError, outcomes_for, parse_junit

SCRIPTS = {
    "pytest": ("agentbon_supervise.py", "run_pytest.py", "pytest_boot.py"),
    "unittest": ("agentbon_supervise.py", "run_pytest.py", "run_unittest.py", "unittest_boot.py"),
    "command": ("agentbon_supervise.py", "run_command.py"),
}
HOUSEKEEPING_TIMEOUT_S = 120.0


def verifiers_dir() -> Path:
    """The runner scripts and critic prompts: the copy shipped in the package, else ``verifiers/`` beside it.

    An installed wheel carries them as ``agentbon/_verifiers`` (setup.py copies them in at build time);
    a source checkout or an editable install has only the top-level ``verifiers/`` folder.
    """
    package = Path(__file__).resolve().parents[1]
    candidates = (package / "_verifiers", package.parent / "verifiers")
    for path in candidates:
        if (path / "agentbon_supervise.py").is_file():
            return path
    raise FileNotFoundError(
        f"agentbon's verifier scripts are missing (looked in {' and '.join(map(str, candidates))}); "
        "reinstall agentbon, or run it from a source checkout"
    )


class _Fail(Exception):
    """Ends one verification early with a verdict status and reason (not an error of agentbon)."""

    def __init__(self, reason: str, status: str = "fail", **fields: object):
        super().__init__(reason)
        self.reason, self.status, self.fields = reason, status, fields


class TestVerifier:
    """Verifies candidate patches with tests in fresh sandboxes (protocols.Verifier)."""

    __test__ = False

    def __init__(
        self,
        backend: SandboxBackend,
        config: VerifyConfig | None = None,
        cache: VerdictCache | None = None,
        labels: dict[str, str] | None = None,
        output_limit: int = 20_000,
    ):
        self.backend = backend
        self.config = config or VerifyConfig()
        self.cache = cache if cache is not None else (VerdictCache() if self.config.dedupe else None)
        self.labels = labels or {}
        self.output_limit = output_limit

    def with_labels(self, **labels: str) -> TestVerifier:
        """This verifier with more container labels (the orchestrator names the unit, so a dead one's container
        can be reaped); it shares the backend and the cache."""
        other = copy.copy(self)
        other.labels = {**self.labels, **labels}
        return other

    def verify(self, task: Task, rollout: Rollout, role: Role) -> Verdict:
        """Run the role's tests on the rollout's patch; identical patches share one verification."""
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
        if self.cache is None:
            return self._verify(task, tests, rollout.patch, base)
        verdict, shared = self.cache.run(
            VerdictCache.key(task, role, rollout.patch), lambda: self._verify(task, tests, rollout.patch, base)
        )
        if not shared:
            return verdict
        note = f" (verdict shared with identical patch {verdict.rollout_id})"
        return verdict.model_copy(
            update={"run_id": base.run_id, "rollout_id": base.rollout_id, "role": role, "reason": verdict.reason + note}
        )

    def _verify(self, task: Task, tests: TestSet, patch: str, base: Verdict) -> Verdict:
        started = time.monotonic()
        labels = {**self.labels, "role": "verify"}
        state: dict[str, object] = {"tampered": []}
        try:
            with self.backend.open(task, labels) as sandbox:
                status, reason, fields = self._run(sandbox, task, tests, patch, state)
        except _Fail as f:
            status, reason, fields = f.status, f.reason, f.fields
        except (InfraError, ConnectionError) as e:
            status, reason, fields = "infra_error", f"{type(e).__name__}: {e}", {}
        update = {"status": status, "reason": reason, "tampered": state["tampered"], **fields}
        update["duration_s"] = round(time.monotonic() - started, 3)
        return base.model_copy(update=update)

    # ------------------------------------------------------------------------------------ steps
    def _sh(self, sandbox: Sandbox, command: str, timeout: float = HOUSEKEEPING_TIMEOUT_S):
        return sandbox.exec(command, timeout=timeout, workdir=sandbox.workdir)

    def _run(self, sandbox: Sandbox, task: Task, tests: TestSet, patch: str, state: dict) -> tuple[str, str, dict]:
        # Outside the repository, in the sandbox's temp dir (a process sandbox confines files to its own tree).
        vdir_sh = f'"${{TMPDIR:-/tmp}}/agentbon-verify-{secrets.token_hex(8)}"'
        made = self._sh(sandbox, f'd={vdir_sh} && mkdir -p "$d" && echo "$d"')
        vdir = made.output.strip().splitlines()[-1] if made.output.strip() else ""
        if made.exit_code != 0 or not vdir.startswith("/") or any(c in vdir for c in " '\"$`\\"):
            how = "timed out" if made.timed_out else f"exit {made.exit_code}"
            raise _Fail(
                f"cannot prepare the sandbox ({how} after {made.duration_s:.1f}s): {made.output[-300:].strip() or 'no output'}",
                status="infra_error",
            )
        if patch.strip():
            self._apply_candidate(sandbox, task, patch, vdir, state)
        if tests.runner == "swebench":  # the harness's eval script applies the test patch itself
            return self._run_harness(sandbox, task, tests, patch, vdir)
        if tests.patch:
            sandbox.write_file(f"{vdir}/tests.diff", tests.patch)
            applied = self._sh(sandbox, f"git apply --whitespace=nowarn {vdir}/tests.diff")
            if applied.exit_code != 0:
                # The guard restored every file the test patch names, so this is the task's fault.
                raise _Fail(f"task error: test patch does not apply: {applied.output.strip()[-300:]}", "infra_error")
        report, junit = self._run_tests(sandbox, tests, vdir)
        if sandbox.isolation != "docker":
            self._sh(sandbox, f"rm -rf {vdir}")
        return self._judge(tests, report, junit)

    def _apply_candidate(self, sandbox: Sandbox, task: Task, patch: str, vdir: str, state: dict) -> None:
        sandbox.write_file(f"{vdir}/candidate.diff", patch)
        # Lists go to files (exec output is capped; a patch may touch thousands of files). Exit 97: no apply.
        applied = self._sh(
            sandbox,
            f"git apply --index --whitespace=nowarn {vdir}/candidate.diff || exit 97; "
            f"git diff --cached --name-status --no-renames -z HEAD > {vdir}/changed && "
            f"git ls-tree --name-only -z HEAD > {vdir}/top",
        )
        if applied.exit_code == 97:
            first = next((ln for ln in applied.output.splitlines() if ln.strip()), "")
            raise _Fail(f"patch does not apply: {first[:200]}", patch_applied=False, log=applied.output[-4000:])
        if applied.exit_code != 0:
            raise _Fail(f"cannot list the patch's changes: {applied.output[-300:]}", status="infra_error")
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
        if flagged:
            state["tampered"] = [p for _, p in flagged]
            undone = self._sh(sandbox, guard.restore_script(flagged))
            if undone.exit_code != 0:
                raise _Fail(f"cannot undo test-file changes: {undone.output[-300:]}", status="infra_error")

    def _run_harness(
        self, sandbox: Sandbox, task: Task, tests: TestSet, patch: str, vdir: str
    ) -> tuple[str, str, dict]:
        log, why = harness.run(sandbox, harness.eval_script(task, tests), vdir, self.config.timeout_s)
        if sandbox.isolation != "docker":
            self._sh(sandbox, f"rm -rf {vdir}")
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

    def _run_tests(self, sandbox: Sandbox, tests: TestSet, vdir: str) -> tuple[dict, bytes | None]:
        scripts = verifiers_dir()
        for name in SCRIPTS[tests.runner]:
            sandbox.write_file(f"{vdir}/{name}", (scripts / name).read_bytes())
        junit_path, result_path = f"{vdir}/{secrets.token_hex(12)}.xml", f"{vdir}/result.json"
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
        }
        sandbox.write_file(f"{vdir}/spec.json", json.dumps(spec))
        script = {"pytest": "run_pytest.py", "unittest": "run_unittest.py", "command": "run_command.py"}[tests.runner]
        command = f'PY=$(command -v python3 || command -v python) && exec "$PY" -I {vdir}/{script} {vdir}/spec.json'
        ran = self._sh(sandbox, command, timeout=self.config.timeout_s + 60)
        if ran.timed_out:
            raise _Fail("test run timed out", log=ran.output[-4000:])
        report = self._read_json(sandbox, result_path)
        if report is None:
            raise _Fail(f"the test runner reported nothing (exit {ran.exit_code}; killed?)", log=ran.output[-4000:])
        junit = self._read(sandbox, junit_path) if report.get("junit_exists") else None
        return report, junit

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

    def _judge(self, tests: TestSet, report: dict, junit: bytes | None) -> tuple[str, str, dict]:
        code = report.get("exit_code")
        fields: dict = {"runner_exit_code": code, "log": str(report.get("output", ""))[-4000:]}
        if report.get("timed_out"):
            return "fail", f"test run timed out after {self.config.timeout_s:g}s", fields
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
        contradiction = crosscheck(tests.runner, code, cases)
        if contradiction:
            return "fail", f"not trusted: {contradiction}", fields
        status, reason = grade(tests, fields["tests"])
        return status, reason, fields
