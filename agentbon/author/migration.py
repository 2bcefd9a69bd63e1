"""A migration suite from a list of repositories and one instruction (``agentbon tasks migration``).

One task per repository: the repository at its ref (the base), the instruction as the problem statement,
evidence = grade = the repository's own tests (``evidence_is_grade``: a migration's tests are what a deployed
system runs), plus what says the migration is done (docs/authoring.md):

- **warnings as errors** (``--warnings-as-errors DeprecationWarning``): a pytest plugin baked into the task image
  (``agentbon_warnings_as_errors``, loaded with ``-p`` by the grade's ``pytest_plugins``) turns those warning
  categories into errors in every test, after the repository's own filters;
- **an acceptance command** (``--acceptance 'CMD'``, or ``--acceptance-pattern REGEX``: no tracked Python file
  matches it): a test the grade's test patch adds at the repository's root,
  ``agentbon_acceptance_test.py::test_acceptance``, which runs the command there and passes iff it exits 0 (for
  example, that no import of the old library remains). Like every test patch it is hidden from the agent and
  restored before grading. Its outcome at the base comes from a run that names it to pytest, as the verifier does,
  so a ``testpaths`` that would not collect it cannot make a task the empty patch resolves.

The base's outcomes decide the lists, per test: the suite runs twice at the base, as it is and with the
acceptance test and the warnings as errors. FAIL_TO_PASS: tests that pass as they are and fail with the
warnings as errors (the deprecated use the instruction removes), and the acceptance test when it fails at the
base. PASS_TO_PASS: tests that pass both ways. A test that fails as it is was broken before the migration: it is
in neither list (counted in ``metadata.broken_at_base``), so it is not held against the migration. A repository
whose base shows nothing to migrate (no FAIL_TO_PASS) is refused, as are one without tests, an instruction file
that is missing, and an environment that does not build: each error names the repository and the step, and the
other repositories' tasks are still written.
"""

from __future__ import annotations

import base64
import shlex
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from agentbon.author.batch import read_batch
from agentbon.author.commit import (
    TASK_ID,
    Refused,
    _repo,
    bundle_base,
    environment_for,
    public_source,
    repo_name,
    run_suite,
    searched_refs,
    unique_folder,
)
from agentbon.errors import AgentbonError
from agentbon.types import Environment, RepoSource, Task, TestSet

PLUGIN_MODULE = "agentbon_warnings_as_errors"
ACCEPTANCE_FILE = "agentbon_acceptance_test.py"
ACCEPTANCE_ID = f"{ACCEPTANCE_FILE}::test_acceptance"


@dataclass(frozen=True)
class RepoLine:
    """One repository of the list: where it is and which ref is the base (None: its HEAD)."""

    source: str
    ref: str | None
    where: str
    """``file:line`` of the list, for errors."""
    task_id: str | None = None
    """The task's id (a batch entry's ``id``); default ``<name>-<repository's name>``."""
    problem: str | None = None
    """This repository's problem statement (a batch entry's); default the instruction."""


def read_list(path: Path) -> tuple[list[RepoLine], list[str]]:
    """The repositories of a list file (``SOURCE [REF]`` per line, ``#`` comments), or of a batch file (``.yaml``,
    ``.yml``: ``author/batch.py``, with ids and problem statements), and an error per bad line."""
    if path.suffix in (".yaml", ".yml"):
        entries, errors = read_batch(path, commit_required=False)
        lines = [RepoLine(e.repo, e.commit, e.where, e.id, e.statement(path)) for e in entries]
        return lines, errors
    lines, errors = [], []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        words = text.split()
        if len(words) > 2:
            errors.append(f"{path}:{number}: expected 'SOURCE [REF]', got {len(words)} words")
            continue
        lines.append(RepoLine(words[0], words[1] if len(words) == 2 else None, f"{path}:{number}"))
    return lines, errors


def plugin_source(categories: list[str]) -> str:
    return (
        '"""Written by agentbon tasks migration: these warning categories are errors in every test."""\n\n'
        f"CATEGORIES = {categories!r}\n\n\n"
        "def pytest_configure(config):\n"
        "    for category in CATEGORIES:  # after the repository's own filters, so these win\n"
        '        config.addinivalue_line("filterwarnings", "error::" + category)\n'
    )


def plugin_setup(categories: list[str]) -> str:
    """The image build step that installs the warnings plugin into the interpreter's site-packages."""
    encoded = base64.b64encode(plugin_source(categories).encode()).decode()
    where = "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')"
    return f'mkdir -p "{where}" && echo {encoded} | base64 -d > "{where}/{PLUGIN_MODULE}.py"'


def acceptance_patch(command: str) -> str:
    """A diff that adds the acceptance test at the repository's root."""
    body = [
        '"""Added by agentbon tasks migration: the migration\'s acceptance command must exit 0."""',
        "",
        "import pathlib",
        "import subprocess",
        "",
        f"COMMAND = {command!r}",
        "",
        "",
        "def test_acceptance():",
        "    done = subprocess.run(",
        '        ["/bin/sh", "-c", COMMAND], cwd=pathlib.Path(__file__).resolve().parent,',
        "        capture_output=True, text=True, timeout=900,",
        "    )",
        '    assert done.returncode == 0, f"{COMMAND!r} exited {done.returncode}: {(done.stdout + done.stderr)[-2000:]}"',
    ]
    head = [
        f"diff --git a/{ACCEPTANCE_FILE} b/{ACCEPTANCE_FILE}",
        "new file mode 100644",
        "--- /dev/null",
        f"+++ b/{ACCEPTANCE_FILE}",
        f"@@ -0,0 +1,{len(body)} @@",
    ]
    return "\n".join(head + [f"+{line}" for line in body]) + "\n"


def pattern_command(pattern: str) -> str:
    """An acceptance command that passes iff no tracked Python file of the repository matches the extended regular
    expression ``pattern`` (``git grep -E``, the matches printed; the acceptance test itself, which holds the
    pattern, left out). Only git grep's "no match" (exit 1) passes: an error of git's (exit 128) fails."""
    grep = f"git -c safe.directory='*' grep -n -E -e {shlex.quote(pattern)} -- '*.py' ':!{ACCEPTANCE_FILE}'"
    return f"{grep}; test $? -eq 1"


def lists_from(
    plain: dict[str, str], strict: dict[str, str], acceptance: bool
) -> tuple[list[str], list[str], list[str]]:
    """FAIL_TO_PASS, PASS_TO_PASS and the tests broken at the base, from the base's two runs."""
    f2p, p2p, broken = [], [], []
    for test_id in sorted(set(plain) | set(strict)):
        if test_id == ACCEPTANCE_ID:
            continue
        if plain.get(test_id) not in ("passed", None):
            broken.append(test_id)
        elif plain.get(test_id) == "passed" and strict.get(test_id) == "passed":
            p2p.append(test_id)
        elif plain.get(test_id) == "passed":
            f2p.append(test_id)
    if acceptance:
        (p2p if strict.get(ACCEPTANCE_ID) == "passed" else f2p).append(ACCEPTANCE_ID)
    return f2p, p2p, broken


@dataclass
class Written:
    task_dir: Path
    task_id: str
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    broken_at_base: list[str]


def migration_task(
    line: RepoLine,
    instruction: str,
    out: Path,
    *,
    name: str,
    backend: Any,
    acceptance: str | None = None,
    warnings_as_errors: tuple[str, ...] = (),
    environment: Environment | None = None,
    detect_environment: bool = True,
    timeout_s: float = 900.0,
    say: Callable[[str], None] = lambda line: None,
) -> Written:
    """Write ``<out>/<name>-<repo>/`` for one repository of the list (module docstring); the environment's empty
    fields are filled from what the repository declares unless ``detect_environment`` is off."""
    source = line.source
    given = environment or Environment()
    plugins = [PLUGIN_MODULE] if warnings_as_errors else []
    with tempfile.TemporaryDirectory(prefix="agentbon-migration-") as tmp:
        repo = _repo(source, Path(tmp))
        try:
            base = repo.commit(line.ref or "HEAD").hexsha
        except Exception as e:  # noqa: BLE001 - a bad ref, an empty repository: one message
            raise Refused(source, "read", f"no commit {line.ref or 'HEAD'!r} ({line.where}): {searched_refs(repo)}") from e
        task_id = line.task_id or unique_folder(
            out, TASK_ID.sub("-", f"{name}-{repo_name(repo, source, base)}").strip("-."), say
        )
        instruction = line.problem or instruction
        folder = out / task_id
        if folder.exists():
            raise Refused(source, "write", f"{folder} exists already ({line.where})")
        staging = Path(tmp) / task_id
        staging.mkdir()
        local = repo.git_dir if repo.bare else repo.working_tree_dir
        say(f"{task_id}: base {base[:12]}: bundling the history up to it")
        detected = bundle_base(str(local), base, staging / "repo.bundle")
        environment = environment_for(given, detected if detect_environment else None)
        for note in detected.notes if detect_environment else []:
            say(f"{task_id}: environment: {note}")
        if warnings_as_errors:
            setup = [*environment.setup, plugin_setup(list(warnings_as_errors))]
            environment = environment.model_copy(update={"setup": setup})
        provisional = Task(
            task_id=task_id, kind="migration", problem_statement=instruction,
            repo=RepoSource(url=str(staging / "repo.bundle"), base_commit=base), environment=environment,
            grade=TestSet(command="true"), evidence_is_grade=True,
        )  # fmt: skip
        say(f"{task_id}: the test suite at the base, as it is")
        try:
            plain = run_suite(backend, provisional, [], "as-is", timeout_s, project=detected.project, python=True)
        except Refused:
            raise
        except AgentbonError as e:  # the image did not build, the engine failed: this repository's environment
            raise Refused(source, "environment", f"{type(e).__name__}: {str(e).splitlines()[0][:400]}") from e
        if not plain["tests"]:
            raise Refused(
                source,
                "tests",
                f"pytest found no tests at the base (collection errors: {plain['errors'][:3] or 'none'})",
            )
        patches = [acceptance_patch(acceptance)] if acceptance else []
        say(f"{task_id}: again with {'the acceptance test' if acceptance else ''}"
            f"{' and ' if acceptance and warnings_as_errors else ''}"
            f"{', '.join(warnings_as_errors) + ' as errors' if warnings_as_errors else ''}")  # fmt: skip
        strict = run_suite(
            backend, provisional, patches, "migration", timeout_s, plugins=tuple(plugins), project=detected.project
        )
        if acceptance:  # named to pytest, as the verifier names it: a `testpaths` elsewhere would leave it uncollected
            say(f"{task_id}: the acceptance test on its own, named to pytest")
            alone = run_suite(
                backend, provisional, patches, "acceptance", timeout_s, plugins=tuple(plugins),
                project=detected.project, select=(ACCEPTANCE_ID,),
            )  # fmt: skip
            if ACCEPTANCE_ID not in alone["tests"]:
                raise Refused(source, "tests", f"the acceptance test did not run at the base, named to pytest "
                              f"(collection errors: {alone['errors'][:3] or 'none'})")  # fmt: skip
            strict["tests"][ACCEPTANCE_ID] = alone["tests"][ACCEPTANCE_ID]
        say(f"{task_id}: the sandbox runs Python {plain['python']}: a deprecation this Python does not warn about yet "
            "shows only through --acceptance or --acceptance-pattern")  # fmt: skip
        f2p, p2p, broken = lists_from(plain["tests"], strict["tests"], bool(acceptance))
        if not f2p:
            raise Refused(
                source, "tests", "nothing at the base shows what the instruction removes: no test fails with "
                f"{', '.join(warnings_as_errors) or 'no warnings'} as errors"
                f"{' and the acceptance command passes' if acceptance else ' (give --acceptance or --warnings-as-errors)'}",
            )  # fmt: skip
        grade: dict[str, Any] = {"runner": "pytest", "fail_to_pass": f2p, "pass_to_pass": p2p}
        if strict["plugins"] or plugins:  # the image's plugins the lists were measured with, then the warnings one
            grade["pytest_plugins"] = [*strict["plugins"], *plugins]
        if acceptance:
            (staging / "test.patch").write_text(patches[0])
            grade["patch_file"] = "test.patch"
        metadata = {
            "source": public_source(source, repo_name(repo, source, base)), "migration": name, "python": plain["python"]
        }  # fmt: skip
        if broken:
            metadata["broken_at_base"] = (
                f"{len(broken)}: " + ", ".join(broken[:20]) + (" ..." if len(broken) > 20 else "")
            )
        spec: dict[str, Any] = {
            "task_id": task_id, "kind": "migration", "problem_statement": instruction.strip() + "\n",
            "repo": {"url": "repo.bundle", "base_commit": base},
            "environment": environment.model_dump(exclude_defaults=True) or {"python_packages": []},
            "grade": grade, "evidence_is_grade": True, "metadata": metadata,
        }  # fmt: skip
        (staging / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, width=120))
        out.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), folder)
    say(f"{task_id}: {len(f2p)} FAIL_TO_PASS, {len(p2p)} PASS_TO_PASS, {len(broken)} broken at the base: {folder}")
    return Written(folder, task_id, f2p, p2p, broken)
