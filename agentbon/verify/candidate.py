"""The verifier's first steps in a sandbox: a directory of its own, the candidate applied and guarded, the test patch.

``apply_candidate`` applies the patch with ``git apply --index`` (no fuzz, no ``--reject``; a SWE-bench task with the
harness's fallbacks, ``harness.apply_script``), lists what it changed and, in the same engine call, compiles the
Python files it added or changed (``parsecheck``). It returns an ``Applied`` record naming the protected changes
(``guard``); ``undo`` restores them before any test runs (docs/security.md, "Tamper guard and restore"). A step that cannot go
on raises ``judged.Failed`` with the verdict it comes to.
"""

from __future__ import annotations

import secrets
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from agentbon.diffs import files_touched
from agentbon.protocols import Sandbox
from agentbon.types import ExecResult, Task, TestSet
from agentbon.verify import guard, harness, parsecheck
from agentbon.verify.budget import HOUSEKEEPING_S
from agentbon.verify.judged import fail


@dataclass(frozen=True)
class Applied:
    """What applying a candidate found."""

    guarded: tuple[tuple[str, str], ...] = ()
    """``(git status letter, path)`` of each protected change the patch made: undone before the tests run."""
    applied_with: str | None = None
    """The harness's fallback that applied the patch where the strict ``git apply`` did not (SWE-bench tasks)."""
    parses: bool | None = None
    parse_errors: list[str] = field(default_factory=list)

    @property
    def tampered(self) -> list[str]:
        """The paths of ``guarded``: ``Verdict.tampered``."""
        return [path for _, path in self.guarded]


def sh(sandbox: Sandbox, command: str, timeout: float = HOUSEKEEPING_S) -> ExecResult:
    """Housekeeping, as root; the tests do not run as root (docs/security.md, "Sandbox hardening")."""
    return sandbox.exec(command, timeout=timeout, workdir=sandbox.workdir, user="root")


def new_vdir(sandbox: Sandbox) -> str:
    """A fresh directory for the verifier's files. Outside the repository, in the sandbox's temp dir (a process
    sandbox confines files to its own tree)."""
    vdir_sh = f'"${{TMPDIR:-/tmp}}/agentbon-verify-{secrets.token_hex(8)}"'
    # Root's and read-only to the tests, but for out/, where the runner writes its results.
    made = sh(sandbox, f'd={vdir_sh} && mkdir -p "$d/out" && chmod 1777 "$d/out" && echo "$d"')
    vdir = made.output.strip().splitlines()[-1] if made.output.strip() else ""
    if made.exit_code != 0 or not vdir.startswith("/") or any(c in vdir for c in " '\"$`\\"):
        how = "timed out" if made.timed_out else f"exit {made.exit_code}"
        output = made.output[-300:].strip() or "no output"
        raise fail(f"cannot prepare the sandbox ({how} after {made.duration_s:.1f}s): {output}", "infra_error")
    return vdir


def clean_up(sandbox: Sandbox, vdir: str) -> None:
    """Remove the verifier's directory where the sandbox outlives it (a container goes with its files)."""
    if not sandbox.isolation.startswith("docker"):
        sh(sandbox, f"rm -rf {vdir}")


def apply_tests(sandbox: Sandbox, tests: TestSet, vdir: str) -> None:
    if tests.patch:
        sandbox.write_file(f"{vdir}/tests.diff", tests.patch)
        applied = sh(sandbox, f"git apply --whitespace=nowarn {vdir}/tests.diff")
        if applied.exit_code != 0:
            # The guard restored every file the test patch names, so this is the task's fault.
            raise fail(f"task error: test patch does not apply: {applied.output.strip()[-300:]}", "infra_error")


def apply_candidate(sandbox: Sandbox, task: Task, patch: str, vdir: str, parse: bool = True) -> Applied:
    """Apply ``patch`` and say what it changed that the guard protects (``parse``: compile what it changed too)."""
    sandbox.write_file(f"{vdir}/candidate.diff", patch)
    apply = f"git apply --index --whitespace=nowarn {vdir}/candidate.diff || exit 97"
    if task.kind == "swebench":  # as the harness applies predictions: with its fallbacks (docs/swebench.md)
        sandbox.write_file(f"{vdir}/paths", "\0".join(files_touched(patch)))
        apply = harness.apply_script(f"{vdir}/candidate.diff", f"{vdir}/paths")
    # Lists go to files (exec output is capped; a patch may touch thousands of files). Exit 97: no apply.
    applied = sh(
        sandbox,
        f"{{\n{apply}\n}} && git diff --cached --name-status --no-renames -z HEAD > {vdir}/changed && "
        f"git ls-tree --name-only -z HEAD > {vdir}/top"
        + (f" && {{\n{parsecheck.script(f'{vdir}/changed')}\n}}" if parse else ""),
    )
    if applied.exit_code == 97:
        first = next((ln for ln in applied.output.splitlines() if ln.strip()), "")
        raise fail(f"patch does not apply: {first[:200]}", patch_applied=False, log=applied.output[-4000:])
    if applied.exit_code != 0:
        raise fail(f"cannot list the patch's changes: {applied.output[-300:]}", "infra_error")
    how = [ln[len(harness.APPLIED) :] for ln in applied.output.splitlines() if ln.startswith(harness.APPLIED)]
    listed = sandbox.read_file(f"{vdir}/changed").decode("utf-8", "replace").split("\0")
    changes = [(listed[i][:1], listed[i + 1]) for i in range(0, len(listed) - 1, 2)]
    protected = guard.task_files(task)
    top: set[str] | None = None
    guarded = []
    for status, path in changes:
        if Path(path).name in guard.SECTIONED_CONFIG and path not in protected:
            if _section_changed(sandbox, status, path, vdir):
                guarded.append((status, path))
            continue
        if not guard.why_protected(path, protected) and status == "A" and guard.may_shadow(path):
            if top is None:  # read the base's top-level names only when a new module might shadow one
                top = set(sandbox.read_file(f"{vdir}/top").decode("utf-8", "replace").split("\0"))
            if guard.shadows_module(path, top):
                guarded.append((status, path))
        elif guard.why_protected(path, protected):
            guarded.append((status, path))
    parsed = parsecheck.read(applied.output, ignore=frozenset(p for _, p in guarded))
    return Applied(
        guarded=tuple(guarded),
        applied_with=how[-1] if how and how[-1] != "git apply" else None,
        parses=parsed.parses,
        parse_errors=list(parsed.errors),
    )


def undo(sandbox: Sandbox, applied: Applied) -> None:
    """Restore the protected files the candidate changed, as the base commit has them."""
    if applied.guarded:
        undone = sh(sandbox, guard.restore_script(list(applied.guarded)))
        if undone.exit_code != 0:
            raise fail(f"cannot undo test-file changes: {undone.output[-300:]}", "infra_error")


def _section_changed(sandbox: Sandbox, status: str, path: str, vdir: str) -> bool:
    old = new = None
    if status != "A":
        sh(sandbox, f"git show HEAD:{shlex.quote(path)} > {vdir}/base.cfg")
        old = sandbox.read_file(f"{vdir}/base.cfg").decode("utf-8", "replace")
    if status != "D":
        new = sandbox.read_file(path).decode("utf-8", "replace")
    return guard.pytest_section_changed(path, old, new)
