"""A bug-fix task from a repository and the commit that fixed the bug (``agentbon tasks from-commit``).

Steps, each of which can refuse with a ``TaskError`` naming the repository and the step (docs/authoring.md):

1. **read**: the repository (a local path, or a git URL cloned into a temporary mirror); the fix commit; its first
   parent is the base (for a pull request's merge commit, the target branch before the merge, so the diff is
   the pull request's);
2. **split**: the fix's diff into test files (those the guard protects, ``diffs.test_file_kind``: under a
   ``test``/``tests``/``testing``/``e2e`` folder, ``test_*.py``, ``*_test.py``, ``conftest.py``) and the rest, the
   code fix. Refused when either side is empty;
3. **bundle**: ``repo.bundle`` with the history up to the base commit and nothing after it (the fix never
   enters the task folder except as ``gold.patch``);
4. **tests**: in two fresh sandboxes of the task's image, the repository's whole pytest suite at the base with
   the test diff, then with the test diff and the fix. FAIL_TO_PASS: tests that pass with the fix and failed,
   errored or were not collectable without it (in a file the test diff touches); PASS_TO_PASS: tests that pass
   in both, by default only those in the files the test diff touches, the fix changes, or that import a module it
   changes (``--pass-to-pass all``: the whole suite's; docs/authoring.md, "Lean PASS_TO_PASS lists"). Refused when
   no test goes from failing to passing;
5. **evidence**: the suite once more at the base as it is; the evidence is the PASS_TO_PASS tests that pass
   there (a test the test patch adds, or a parameter id it renumbers, does not exist before it);
6. **write**: ``<out>/<task_id>/`` with ``task.yaml``, ``repo.bundle``, ``gold.patch`` and ``test.patch``.
   ``agentbon tasks validate`` then checks it three times over, flakiness included.

Every run loads the pytest plugins installed in the task image (their ``pytest11`` entry points, the project's
own left out) by name with autoload off, and the task's test sets name the same ones (``pytest_plugins``), so
that grading runs the tests as they were measured.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from agentbon.author.batch import gives_away
from agentbon.author.detect import Detected, detect
from agentbon.author.imports import lean_files
from agentbon.author.outcomes import PLUGIN
from agentbon.console import listed
from agentbon.diffs import is_test_path
from agentbon.errors import AgentbonError, TaskError
from agentbon.types import Environment, RepoSource, Task, TestSet

_PLUGIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
TASK_ID = re.compile(r"[^A-Za-z0-9._-]+")
PassToPass = Literal["lean", "all"]


@dataclass
class Made:
    """A task written from a fix commit, and what finding its tests saw."""

    task_dir: Path
    task_id: str
    base: str
    fix: str
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    before: dict[str, str] = field(default_factory=dict)
    """Outcome of every test at the base with the test diff."""
    after: dict[str, str] = field(default_factory=dict)
    """Outcome of every test with the test diff and the fix."""
    suite: int = 0
    """PASS_TO_PASS tests of the whole suite (``pass_to_pass`` holds all of them, or the lean part)."""


class Refused(TaskError):
    """The repository and commit do not give a usable task; ``step`` names where it stopped."""

    def __init__(self, source: str, step: str, problem: str):
        super().__init__(source, step, problem)

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:
        return type(self), (self.source, self.field, self.problem)


def _repo(source: str, tmp: Path) -> Any:
    """A GitPython repository for ``source``: the local clone itself, or a mirror of a URL in ``tmp``."""
    import git

    from agentbon.types import is_git_url

    try:
        if not is_git_url(source) and (Path(source) / ".git").exists():
            return git.Repo(source)
        # Everything else (a URL, ``file://``, a bare directory with or without ``config``, a bundle) is mirrored:
        # GitPython reads a bare directory without ``config`` as a work tree and then finds no commit in it.
        return git.Repo.clone_from(source, tmp / "mirror.git", mirror=True, quiet=True)
    except (git.GitCommandError, git.InvalidGitRepositoryError, git.NoSuchPathError) as e:
        raise Refused(source, "read", f"not a git repository that can be read: {e}") from e


def searched_refs(repo: Any) -> str:
    """The refs a commit was looked up among, for the message that says it is missing."""
    refs = [r for r in str(repo.git.for_each_ref("--format=%(refname:short)")).splitlines() if r]
    return f"searched all objects and {len(refs)} refs ({listed(refs, 8)})" if refs else "the repository has no refs"


def split_fix(repo: Any, source: str, fix_ref: str) -> tuple[str, str, str, str, str]:
    """``(base sha, fix sha, code diff, test diff, commit message)`` of the fix commit ``fix_ref``."""
    import git

    try:
        fix = repo.commit(fix_ref)
    except (git.BadName, ValueError, git.GitCommandError) as e:
        raise Refused(source, "read", f"no commit {fix_ref!r} in the repository: {searched_refs(repo)}") from e
    if not fix.parents:
        raise Refused(source, "read", f"{fix.hexsha[:12]} is the first commit: there is no base before it")
    base = fix.parents[0]
    paths = [p for p in repo.git.diff("--name-only", "--no-renames", base.hexsha, fix.hexsha).splitlines() if p]
    tests = [p for p in paths if is_test_path(p)]
    code = [p for p in paths if not is_test_path(p)]
    if not tests:
        raise Refused(source, "split", f"{fix.hexsha[:12]} changes no test file ({', '.join(paths[:5])}): nothing "
                      "would show the bug")  # fmt: skip
    if not code:
        raise Refused(source, "split", f"{fix.hexsha[:12]} changes only test files: there is no fix to make")

    def diff(files: list[str]) -> str:
        return str(repo.git.diff("--no-renames", "--binary", base.hexsha, fix.hexsha, "--", *files)) + "\n"

    return base.hexsha, fix.hexsha, diff(code), diff(tests), str(fix.message)


def bundle_base(source: str, base: str, out: Path) -> Detected:
    """``out``: a git bundle of the history up to ``base`` only (branch ``main`` at it); returns the test
    environment the repository declares at ``base`` (``detect``)."""
    import git

    from agentbon.sandbox.repo import BRANCH, prepare_repo

    with tempfile.TemporaryDirectory(prefix="agentbon-author-") as tmp:
        where = Path(tmp) / "repo"
        prepare_repo(source, base, where)
        git.Repo(where).git.bundle("create", str(out), BRANCH)
        return detect(where)


def environment_for(given: Environment, detected: Detected | None) -> Environment:
    """The task's environment: what was given, and the detected guess for each field left empty (None: no guess)."""
    if detected is None:
        return given
    update: dict[str, Any] = {}
    if not given.python_packages and not given.image:
        update["python_packages"] = detected.python_packages
    if not given.setup and not given.image:
        update["setup"] = detected.setup
    if not given.env:
        update["env"] = detected.env
    return given.model_copy(update=update)


PLUGINS_OF_IMAGE = (
    "import importlib.metadata as m, json, re, sys; own = sys.argv[1]; "
    "name = lambda s: re.sub(r'[-_.]+', '-', s).lower(); "
    "print(json.dumps(sorted({e.value.split(':')[0].strip() for e in m.entry_points(group='pytest11') "
    "if not (e.dist and own and name(e.dist.name) == own)})))"
)
"""The pytest plugins installed in a task image (``pytest11`` entry points' modules), the project's own left out."""


def image_plugins(sandbox: Any, project: str | None) -> list[str]:
    """The plugins a plain ``pytest`` would autoload in this sandbox, except the project's own (its code is the
    candidate's): authoring runs with exactly these (``-p``, autoload off) and writes them into the task's test
    sets, so that grading loads the same ones the lists were measured with (``TestSet.pytest_plugins``)."""
    done = sandbox.exec(f"python3 -c {shlex.quote(PLUGINS_OF_IMAGE)} {shlex.quote(project or '')}")
    try:
        found = json.loads(done.output.strip().splitlines()[-1]) if done.exit_code == 0 else []
    except (ValueError, IndexError):
        found = []
    return [p for p in found if isinstance(p, str) and _PLUGIN.fullmatch(p)]


def run_suite(
    backend: Any,
    task: Task,
    patches: list[str],
    label: str,
    timeout_s: float,
    plugins: tuple[str, ...] = (),
    project: str | None = None,
    select: tuple[str, ...] = (),
    python: bool = False,
) -> dict[str, Any]:
    """Every test's outcome with ``patches`` applied at the base, in a fresh sandbox (the outcomes plugin), with
    the image's pytest plugins (``image_plugins``, returned under ``plugins``) and ``plugins`` loaded by ``-p``,
    autoload off, as the verifier runs them; ``select``: these test ids only, named to pytest (as the verifier
    names them, whatever the repository's collection settings), instead of the suite it collects; ``python``: the
    sandbox's Python version too, under ``python``."""
    with backend.open(task, {"stage": "author", "rollout": f"{task.task_id}-{label}"}) as sandbox:
        workdir = sandbox.workdir
        for i, patch in enumerate(patches):
            sandbox.write_file(f"/tmp/agentbon-author/{i}.patch", patch)
            done = sandbox.exec(f"git apply --whitespace=nowarn /tmp/agentbon-author/{i}.patch", workdir=workdir)
            if done.exit_code != 0:
                raise Refused(
                    task.repo.url, "tests", f"the {label} diff does not apply at the base: {done.output[-300:]}"
                )
        sandbox.write_file("/tmp/agentbon-author/plugin/agentbon_outcomes.py", PLUGIN)
        # The tests run as the sandbox's user (not root where the image allows): a folder it may write in.
        sandbox.exec("mkdir -p -m 0777 /tmp/agentbon-author/out", workdir=workdir, user="root")
        result = "/tmp/agentbon-author/out/outcomes.json"
        installed = image_plugins(sandbox, project)
        command = (
            f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 AGENTBON_OUTCOMES={result} "
            "PYTHONPATH=/tmp/agentbon-author/plugin${PYTHONPATH:+:$PYTHONPATH} "
            "python3 -m pytest -p agentbon_outcomes -p no:cacheprovider -q -rN"
        ) + "".join(f" -p {name}" for name in [*installed, *plugins]) + "".join(f" {shlex.quote(t)}" for t in select)
        ran = sandbox.exec(command, timeout=timeout_s, workdir=workdir)
        if ran.timed_out:
            raise Refused(task.repo.url, "tests", f"the test suite ran past {timeout_s:g}s ({label})")
        try:
            found: dict[str, Any] = json.loads(sandbox.read_file(result))
        except (OSError, ValueError) as e:
            raise Refused(
                task.repo.url, "tests", f"pytest did not run the suite ({label}, exit {ran.exit_code}): "
                f"{ran.output[-400:]}",
            ) from e  # fmt: skip
        found["plugins"] = installed
        if python:
            said = sandbox.exec("python3 -c 'import platform; print(platform.python_version())'", workdir=workdir)
            found["python"] = said.output.strip().splitlines()[-1] if said.exit_code == 0 and said.output.strip() else "?"
        return found


def outcome_lists(before: dict[str, str], after: dict[str, str], test_files: set[str]) -> tuple[list[str], list[str]]:
    """FAIL_TO_PASS and PASS_TO_PASS from the outcomes before and after the fix (both with the test diff)."""
    f2p, p2p = [], []
    for test_id, outcome in sorted(after.items()):
        if outcome != "passed":
            continue
        was = before.get(test_id)
        if was == "passed":
            p2p.append(test_id)
        elif was in ("failed", "error") or (was is None and test_id.split("::", 1)[0] in test_files):
            f2p.append(test_id)
    return f2p, p2p


def lean_pass_to_pass(repo: Any, fix: str, changed: list[str], p2p: list[str]) -> tuple[list[str], str]:
    """The PASS_TO_PASS tests in the files the fix concerns (``imports.lean_files``, read at the fix commit, where
    the test patch is applied; ``changed``: the paths the fix commit changes), and which files those are, said."""
    import git

    def read(path: str) -> str:
        try:
            return str(repo.git.show(f"{fix}:{path}"))
        except git.GitCommandError as e:  # not a path of the repository's root (another rootdir): kept
            raise OSError(path) from e

    tree = set(str(repo.git.ls_tree("-r", "--name-only", fix)).splitlines())
    code = [p for p in changed if not is_test_path(p)]
    touched = [p for p in changed if is_test_path(p)]
    keep, modules = lean_files({t.split("::", 1)[0] for t in p2p}, code, touched, tree, read)
    how = (
        f"in the test patch's files, the fix's, and those importing {', '.join(modules[:4])}"
        + (f" and {len(modules) - 4} more" if len(modules) > 4 else "")
        if modules
        else "the fix changes no Python module: the whole suite"
    )
    return [t for t in p2p if t.split("::", 1)[0] in keep], how


GENERIC_FOLDERS = {"", "repo", "repository", "src", "source", "checkout", "mirror", "work", "tmp"}


def _last_part(url: str) -> str:
    return url.rstrip("/").removesuffix(".git").replace(":", "/").rsplit("/", 1)[-1]


def repo_name(repo: Any, source: str, sha: str) -> str:
    """The repository's own name: its ``origin`` remote, else the project name in ``pyproject.toml`` or ``setup.cfg``
    at ``sha``, else the folder name unless that is generic (``repo``), then the folder above it."""
    import configparser
    import subprocess
    import tomllib

    from agentbon.types import is_git_url

    if is_git_url(source):
        return _last_part(source)
    origin = subprocess.run(["git", "-C", source, "remote", "get-url", "origin"], capture_output=True, text=True)
    if origin.returncode == 0 and _last_part(origin.stdout.strip()) not in GENERIC_FOLDERS:
        return _last_part(origin.stdout.strip())
    for path in ("pyproject.toml", "setup.cfg"):
        try:
            text = str(repo.git.show(f"{sha}:{path}"))
        except Exception:  # noqa: BLE001 - the file is absent at that commit
            continue
        try:
            if path == "pyproject.toml":
                name = tomllib.loads(text).get("project", {}).get("name")
            else:
                parser = configparser.ConfigParser()
                parser.read_string(text)
                name = parser.get("metadata", "name", fallback=None)
        except (tomllib.TOMLDecodeError, configparser.Error):
            continue
        if isinstance(name, str) and name.strip():
            return name.strip()
    folder = Path(source).resolve()
    for part in (folder.name.removesuffix(".git"), folder.parent.name, "task"):
        if part.lower() not in GENERIC_FOLDERS:
            return part
    return "task"


def public_source(source: str, name: str) -> str:
    """What ``metadata.source`` records: the repository's URL (a given one, or its ``origin`` remote), else its
    ``name``; never a local path, which means nothing on another machine."""
    import subprocess

    from agentbon.types import is_git_url

    if is_git_url(source) and not source.startswith("file:"):
        return source
    local = source.removeprefix("file://")
    origin = subprocess.run(["git", "-C", local, "remote", "get-url", "origin"], capture_output=True, text=True)
    url = origin.stdout.strip()
    return url if origin.returncode == 0 and is_git_url(url) and not url.startswith("file:") else name


def unique_folder(out: Path, task_id: str, say: Callable[[str], None]) -> str:
    """``task_id``, or with the first free ``-2``, ``-3``… suffix when ``out`` holds it already (said)."""
    if not (out / task_id).exists():
        return task_id
    n = 2
    while (out / f"{task_id}-{n}").exists():
        n += 1
    say(f"{task_id}: the suite holds that id already: writing {task_id}-{n}")
    return f"{task_id}-{n}"


def default_task_id(name: str, fix: str) -> str:
    return TASK_ID.sub("-", f"{name}-{fix[:10]}").strip("-.")


def from_commit(
    source: str,
    fix_ref: str,
    out: Path,
    *,
    backend: Any,
    task_id: str | None = None,
    problem: str | None = None,
    environment: Environment | None = None,
    detect_environment: bool = True,
    pass_to_pass: PassToPass = "lean",
    timeout_s: float = 900.0,
    say: Callable[[str], None] = lambda line: None,
) -> Made:
    """Write ``<out>/<task_id>/`` for the fix ``fix_ref`` of the repository ``source`` (module docstring); the
    environment's empty fields are filled from what the repository declares unless ``detect_environment`` is off;
    ``pass_to_pass``: the lean lists or the whole suite's."""
    given = environment or Environment()
    with tempfile.TemporaryDirectory(prefix="agentbon-author-") as tmp:
        repo = _repo(source, Path(tmp))
        base, fix, gold, test_patch, message = split_fix(repo, source, fix_ref)
        if task_id is None:
            task_id = unique_folder(out, default_task_id(repo_name(repo, source, fix), fix), say)
        folder = out / task_id
        if folder.exists():
            raise Refused(source, "write", f"{folder} exists already (give --task-id, or remove it)")
        local = repo.git_dir if repo.bare else repo.working_tree_dir
        staging = Path(tmp) / task_id
        staging.mkdir()
        say(f"{task_id}: base {base[:12]}, fix {fix[:12]}: bundling the history up to the base")
        detected = bundle_base(str(local), base, staging / "repo.bundle")
        environment = environment_for(given, detected if detect_environment else None)
        for note in detected.notes if detect_environment else []:
            say(f"{task_id}: environment: {note}")
        statement = (problem or message).strip()
        if not statement:
            raise Refused(source, "problem", "no problem statement: the commit message is empty (give --problem FILE)")
        named = [] if problem else gives_away(message, gold)
        if not problem:
            say(f"{task_id}: the problem statement is the commit message (--problem FILE, or a batch entry's problem, "
                "gives one)" + (f"; it names the changed code ({', '.join(named[:6])}) and may give the fix away"
                               if named else ""))  # fmt: skip
        provisional = Task(
            task_id=task_id, problem_statement=statement,
            repo=RepoSource(url=str(staging / "repo.bundle"), base_commit=base), environment=environment,
            grade=TestSet(command="true"),
        )  # fmt: skip
        say(f"{task_id}: running the test suite at the base with the test diff")
        own = detected.project
        try:
            before = run_suite(backend, provisional, [test_patch], "test", timeout_s, project=own)
        except Refused:
            raise
        except AgentbonError as e:  # the image did not build (a dependency that does not install), the engine failed
            raise Refused(source, "environment", f"{type(e).__name__}: {str(e).splitlines()[0][:400]}") from e
        say(f"{task_id}: running it again with the fix")
        after = run_suite(backend, provisional, [test_patch, gold], "fix", timeout_s, project=own)
        changed = [p for p in repo.git.diff("--name-only", "--no-renames", base, fix).splitlines() if p]
        f2p, p2p = outcome_lists(before["tests"], after["tests"], {p for p in changed if is_test_path(p)})
        if not f2p:
            failing = [t for t, o in after["tests"].items() if o != "passed"]
            hint = f"; {len(failing)} fail even with the fix (first: {failing[0]})" if failing else ""
            raise Refused(
                source, "tests", f"no test fails before the fix and passes after it (ran {len(after['tests'])} tests"
                f"{hint}); collection errors with the fix: {after['errors'][:3] or 'none'}",
            )  # fmt: skip
        say(f"{task_id}: running it at the base as it is, for the selection evidence")
        plain = run_suite(backend, provisional, [], "base", timeout_s, project=own)
        suite = len(p2p)
        if pass_to_pass == "lean":
            p2p, how = lean_pass_to_pass(repo, fix, changed, p2p)
            say(f"{task_id}: PASS_TO_PASS: {len(p2p)} of the suite's {suite} tests kept, {how} "
                "(--pass-to-pass all keeps them all)")  # fmt: skip
        # Evidence: the PASS_TO_PASS tests as they are before the test patch (ids it renumbers or adds are not).
        evidence = [t for t in p2p if plain["tests"].get(t) == "passed"]
        if len(evidence) < len(p2p):
            say(f"{task_id}: {len(p2p) - len(evidence)} PASS_TO_PASS tests are not evidence: they do not exist "
                "or do not pass before the test patch (renumbered parameters, tests it adds)")  # fmt: skip
        plugins = {"pytest_plugins": after["plugins"]} if after["plugins"] else {}
        (staging / "gold.patch").write_text(gold)
        (staging / "test.patch").write_text(test_patch)
        spec: dict[str, Any] = {
            "task_id": task_id,
            "kind": "bugfix",
            "problem_statement": statement + "\n",
            "repo": {"url": "repo.bundle", "base_commit": base},
            "environment": environment.model_dump(exclude_defaults=True) or {"python_packages": []},
            "evidence": {"runner": "pytest", "pass_to_pass": evidence, **plugins},
            "grade": {"runner": "pytest", "fail_to_pass": f2p, "pass_to_pass": p2p, "patch_file": "test.patch", **plugins},
            "gold_patch_file": "gold.patch",
            "metadata": {
                "source": public_source(source, repo_name(repo, source, fix)), "fix_commit": fix,
                "pass_to_pass": f"{pass_to_pass}: {len(p2p)} of {suite}",
                **({} if problem else {"problem_statement": "the commit message"}),
                **({"problem_names_the_fix": ", ".join(named)} if named else {}),
            },
        }  # fmt: skip
        (staging / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, width=120))
        out.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), folder)
    say(f"{task_id}: {len(f2p)} FAIL_TO_PASS, {len(p2p)} PASS_TO_PASS: {folder}")
    return Made(folder, task_id, base, fix, f2p, p2p, before["tests"], after["tests"], suite)
