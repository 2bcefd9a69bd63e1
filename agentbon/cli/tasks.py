"""`agentbon tasks ...`: task suite commands (validate, from-commit, migration)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentbon.files import write_atomic

if TYPE_CHECKING:
    from rich.table import Table

    from agentbon.types import Task, TaskLoadError
    from agentbon.verify.validate import TaskValidation

tasks_app = typer.Typer(help="Task suites: check them before a run.", no_args_is_help=True)


@tasks_app.command("validate")
def validate(
    suite: Annotated[Path, typer.Argument(help="A task folder, a suite directory, or a JSONL / SWE-bench file.")],
    runs: Annotated[int, typer.Option(help="Grade runs per patch (flaky tests differ between runs).", min=1)] = 3,
    task_id: Annotated[
        list[str] | None, typer.Option("--task", "-t", help="Only these task ids.", rich_help_panel="Selection")
    ] = None,
    backend: Annotated[
        str, typer.Option(help="docker | process (weaker isolation).", rich_help_panel="Sandbox")
    ] = "docker",
    timeout: Annotated[float, typer.Option(help="Test-run timeout in seconds.", rich_help_panel="Sandbox")] = 300.0,
    concurrency: Annotated[int, typer.Option(help="Tasks validated at once.", min=1, rich_help_panel="Sandbox")] = 2,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the results as JSON here.", rich_help_panel="Output")
    ] = None,
    flaky_map: Annotated[
        bool,
        typer.Option(
            help="Keep the flaky tests found in the suite's flaky map (flaky.json in the suite folder, or "
            "FILE.flaky.json beside a task file), which grading reads (verify.flaky).",
            rich_help_panel="Output",
        ),
    ] = True,
) -> None:
    """Check every task: the gold patch resolves, the empty patch does not, each grading test is stable.

    Exit codes: 0 every task valid; 1 some task invalid or not loaded; 2 bad options, or no Docker engine answers;
    3 only sandboxes that did not start or failed under the checks (infra_error): run the same command again."""
    from agentbon.config import SandboxConfig, VerifyConfig
    from agentbon.console import make_console
    from agentbon.errors import AgentbonError
    from agentbon.sandbox import make_backend
    from agentbon.tasks import load_suite
    from agentbon.verify import TestVerifier
    from agentbon.verify.validate import TaskValidation, validate_task

    console = make_console()
    tasks, errors = load_suite(suite)
    if task_id:
        tasks = [t for t in tasks if t.task_id in set(task_id)]
    if errors:
        console.print(_errors_table(errors))
    if backend not in ("docker", "process"):
        raise typer.BadParameter(f"{backend!r}: expected docker or process", param_hint="--backend")
    try:
        verifier = TestVerifier(
            make_backend(SandboxConfig(backend=backend)),  # type: ignore[arg-type]
            VerifyConfig(timeout_s=timeout, flaky="strict"),
            labels={"stage": "validate"},
        )
    except AgentbonError as e:
        console.print(f"[red]error:[/] {e}")
        raise typer.Exit(2) from e

    def check(task: Task) -> TaskValidation:
        try:
            return validate_task(task, verifier, runs)
        except Exception as e:  # the per-task boundary: one broken task never stops the others
            problem = f"{type(e).__name__}: {e}"
            return TaskValidation(task_id=task.task_id, source=task.source, status="infra_error", problems=[problem])

    with console.status(f"validating {len(tasks)} task(s), {runs} run(s) per patch..."):
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            results = list(pool.map(check, tasks))
    console.print(_results_table(results, runs))
    if flaky_map:
        _write_flaky_map(suite, results, runs, console)
    bad = [r for r in results if r.status != "valid"]
    console.print(f"{len(results) - len(bad)} valid, {len(bad)} not valid, {len(errors)} failed to load")
    if json_out:
        write_atomic(
            json_out,
            json.dumps(
                {"results": [r.model_dump() for r in results], "load_errors": [e.model_dump() for e in errors]},
                indent=1,
            )
        )
    if errors or any(r.status != "infra_error" for r in bad):
        raise typer.Exit(1)
    if bad:
        console.print(f"{len(bad)} task(s) could not be checked (infra_error): run the same command again")
        raise typer.Exit(3)


def _write_flaky_map(suite: Path, results: list[Any], runs: int, console: Any) -> None:
    """Record what this validation found per task (a task that could not be checked keeps its entry)."""
    from agentbon.verify.flaky import MapError, map_path, read_map, write_map

    where = map_path(suite)
    found = {r.task_id: dict(r.seen) for r in results if r.status != "infra_error"}
    try:
        before = read_map(where)
    except MapError as e:
        console.print(f"[red]error:[/] {where}: {e}; not updated")
        return
    if not any(found.values()) and not any(t in before for t in found):
        return  # nothing flaky, and nothing to clear: no file written
    try:
        write_map(where, found, runs)
    except OSError as e:
        console.print(f"[red]error:[/] cannot write the flaky map {where}: {e}")
        return
    flaky = sum(len(v) for v in found.values())
    console.print(f"flaky map {where}: {flaky} flaky test(s) in {sum(1 for v in found.values() if v)} task(s)")


def _errors_table(errors: list[TaskLoadError]) -> Table:
    from rich.table import Table

    table = Table(title="tasks that failed to load", title_justify="left")
    for col in ("file", "field", "problem"):
        table.add_column(col, overflow="fold")
    for e in errors:
        table.add_row(e.source, e.field, e.problem)
    return table


def _results_table(results: list[TaskValidation], runs: int) -> Table:
    from rich.table import Table

    colour = {"valid": "green", "invalid": "red", "infra_error": "yellow"}
    table = Table(title=f"task validation ({runs} runs per patch)", title_justify="left")
    for col in ("task", "status", "gold resolves", "empty resolves", "gold evidence", "flaky tests", "problems"):
        table.add_column(col, overflow="fold", no_wrap=col == "task")
    for r in results:
        table.add_row(
            r.task_id,
            f"[{colour.get(r.status, 'white')}]{r.status}[/]",
            r.gold,
            r.empty,
            r.evidence,
            "\n".join(r.flaky) or "-",
            "\n".join(r.problems) or "-",
        )
    return table


PackageOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--package", "-p", help="A pip requirement baked into the task image (repeatable).",
        rich_help_panel="Environment",
    ),
]  # fmt: skip
SetupOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--setup", help="A shell command run while building the task image (repeatable).", rich_help_panel="Environment"
    ),
]
EnvOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--env", help="NAME=VALUE: an environment variable of the sandboxes' commands and the tests (repeatable; "
        "PYTHONPATH=src for an uninstalled src/ layout).", rich_help_panel="Environment",
    ),
]  # fmt: skip
NoDetectOpt = Annotated[
    bool,
    typer.Option(
        "--no-detect", help="Do not fill the environment from what the repository declares (pyproject.toml, "
        "setup.cfg, requirements files, tox.ini).", rich_help_panel="Environment",
    ),
]  # fmt: skip
SuiteTimeoutOpt = Annotated[
    float, typer.Option("--timeout", help="Seconds for one run of a test suite.", rich_help_panel="Sandbox")
]


@tasks_app.command("from-commit")
def from_commit(
    repo: Annotated[str | None, typer.Argument(help="The repository: a local clone or a git URL.")] = None,
    commits: Annotated[
        list[str] | None, typer.Argument(help="Fix commits (or pull-request merge commits): one task each.")
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Suite folder to write <task_id>/ into.")] = Path(
        "tasks/new"
    ),
    batch: Annotated[
        Path | None,
        typer.Option(
            "--batch", help="A batch file instead of REPO COMMITS: a YAML list, one entry a task, with repo, commit "
            "and optionally id and problem or problem_file (docs/authoring.md).",
        ),
    ] = None,
    task_id: Annotated[
        str | None, typer.Option("--task-id", help="The task's id (one commit only). Default: <repo>-<sha>.")
    ] = None,
    problem: Annotated[
        Path | None,
        typer.Option(
            "--problem", help="The problem statement, from a file (one commit only). Default: the commit message."
        ),
    ] = None,
    package: PackageOpt = None,
    setup: SetupOpt = None,
    env: EnvOpt = None,
    no_detect: NoDetectOpt = False,
    pass_to_pass: Annotated[
        str,
        typer.Option(
            "--pass-to-pass", metavar="lean|all", help="lean: the PASS_TO_PASS tests in the files the test diff "
            "touches, the fix changes, or that import a module it changes; all: the whole suite's.",
            rich_help_panel="Tests",
        ),
    ] = "lean",
    timeout: SuiteTimeoutOpt = 900.0,
) -> None:
    """Bug-fix tasks from fix commits: the fix split into code and test diffs, FAIL_TO_PASS and PASS_TO_PASS found
    by running the tests at the base with the test diff, with and without the fix (docs/authoring.md).

    A commit that does not give a usable task is reported with the repository and the step where it stopped; the
    other commits' tasks are still written. Exit 1 when any was refused."""
    from pydantic import ValidationError

    from agentbon.author.batch import BatchEntry, read_batch
    from agentbon.author.commit import PassToPass
    from agentbon.author.commit import from_commit as make
    from agentbon.console import make_console

    console = make_console()
    if pass_to_pass not in ("lean", "all"):
        raise typer.BadParameter(f"{pass_to_pass!r}: give lean or all", param_hint="--pass-to-pass")
    lists: PassToPass = "all" if pass_to_pass == "all" else "lean"
    if batch is not None:
        if repo or commits or task_id or problem:
            raise typer.BadParameter("--batch names every task: give no REPO, COMMITS, --task-id or --problem with it")
        if not batch.is_file():
            raise typer.BadParameter(f"{batch}: no such file", param_hint="--batch")
        entries, errors = read_batch(batch, commit_required=True)
        if errors:
            raise typer.BadParameter("\n".join(errors), param_hint="--batch")
        if not entries:
            raise typer.BadParameter(f"{batch}: no entry", param_hint="--batch")
    else:
        if not repo or not commits:
            raise typer.BadParameter("give REPO and at least one commit, or --batch FILE")
        if len(commits) > 1 and (task_id or problem):
            raise typer.BadParameter("--task-id and --problem name one task: give one commit with them")
        if problem is not None and not problem.is_file():
            raise typer.BadParameter(f"{problem}: no such file", param_hint="--problem")
        statement = problem.read_text(encoding="utf-8") if problem is not None else None
        try:
            entries = [BatchEntry(repo=repo, commit=c, id=task_id, problem=statement) for c in commits]
        except ValidationError as e:
            raise typer.BadParameter(e.errors()[0]["msg"], param_hint="--task-id") from None
    environment, backend = _environment_and_backend(console, package, setup, env)

    def write(entry: BatchEntry) -> Any:
        return make(entry.repo, entry.commit or "", out, backend=backend, task_id=entry.id,
                    problem=entry.statement(batch) if batch else entry.problem, environment=environment,
                    detect_environment=not no_detect, pass_to_pass=lists, timeout_s=timeout,
                    say=lambda line: console.print(line, markup=False, highlight=False))  # fmt: skip

    def named(entry: BatchEntry) -> str:
        return f"{entry.commit} ({entry.where})" if batch else str(entry.commit)

    def wrote(made: Any) -> str:
        return (f"{made.task_dir} ({len(made.fail_to_pass)} FAIL_TO_PASS, {len(made.pass_to_pass)} of the suite's "
                f"{made.suite} PASS_TO_PASS); "
                f"check it: agentbon tasks validate {made.task_dir}")  # fmt: skip

    if _write_each(console, entries, write, named, wrote):
        raise typer.Exit(1)


@tasks_app.command("migration")
def migration(
    repos: Annotated[
        Path,
        typer.Argument(
            help="A file listing repositories, one per line: PATH_OR_URL [REF]; or a batch file (.yaml) whose entries "
            "give repo, commit (the base ref) and optionally id and problem or problem_file."
        ),
    ],
    instruction: Annotated[
        Path, typer.Option("--instruction", "-i", help="The migration's instruction (the problem statement).")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Suite folder to write <name>-<repo>/ into.")] = Path(
        "tasks/migration"
    ),
    name: Annotated[
        str | None,
        typer.Option(help="The migration's name, the task ids' prefix. Default: the instruction file's stem."),
    ] = None,
    acceptance: Annotated[
        str | None,
        typer.Option(
            help="A shell command, run at the repository's root after the tests, that must exit 0 once migrated."
        ),
    ] = None,
    acceptance_pattern: Annotated[
        str | None,
        typer.Option(
            help="An extended regular expression no tracked Python file may match once migrated (git grep -E): the "
            "acceptance check as a pattern instead of a command."
        ),
    ] = None,
    warnings_as_errors: Annotated[
        list[str] | None,
        typer.Option(
            "--warnings-as-errors",
            "-W",
            help="A warning category that is an error in every test (repeatable), e.g. DeprecationWarning.",
        ),
    ] = None,
    package: PackageOpt = None,
    setup: SetupOpt = None,
    env: EnvOpt = None,
    no_detect: NoDetectOpt = False,
    timeout: SuiteTimeoutOpt = 900.0,
) -> None:
    """A migration suite: one task per repository of the list, the instruction as the problem, evidence = grade =
    the repository's own tests, FAIL_TO_PASS from what fails at the base with the warnings as errors or the
    acceptance command; tests broken before the migration are in neither list (docs/authoring.md).

    A repository that does not give a usable task is reported with the step where it stopped; the others are still
    written. Exit 1 when any was refused."""
    import re

    from agentbon.author.migration import migration_task, pattern_command, read_list
    from agentbon.console import make_console

    console = make_console()
    if acceptance and acceptance_pattern:
        raise typer.BadParameter("give --acceptance or --acceptance-pattern, not both", param_hint="--acceptance-pattern")
    if acceptance_pattern is not None:
        try:
            re.compile(acceptance_pattern)
        except re.error as e:
            raise typer.BadParameter(f"{acceptance_pattern!r}: {e}", param_hint="--acceptance-pattern") from None
        acceptance = pattern_command(acceptance_pattern)
    for path, option in ((repos, "REPOS"), (instruction, "--instruction")):
        if not path.is_file():
            raise typer.BadParameter(f"{path}: no such file", param_hint=option)
    text = instruction.read_text(encoding="utf-8")
    if not text.strip():
        raise typer.BadParameter(f"{instruction}: the instruction is empty", param_hint="--instruction")
    for category in warnings_as_errors or []:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", category):
            raise typer.BadParameter(f"{category!r} is not a warning category name", param_hint="--warnings-as-errors")
    lines, errors = read_list(repos)
    for error in errors:
        console.print(f"[red]skipped[/] {error}", highlight=False)
    if not lines:
        raise typer.BadParameter(f"{repos}: no repository listed", param_hint="REPOS")
    environment, backend = _environment_and_backend(console, package, setup, env)

    def write(line: Any) -> Any:
        return migration_task(
            line, text, out, name=name or instruction.stem, backend=backend, acceptance=acceptance,
            warnings_as_errors=tuple(warnings_as_errors or ()), environment=environment, detect_environment=not no_detect,
            timeout_s=timeout,
            say=lambda msg: console.print(msg, markup=False, highlight=False),
        )  # fmt: skip

    def wrote(made: Any) -> str:
        return (f"{made.task_dir} ({len(made.fail_to_pass)} FAIL_TO_PASS, {len(made.pass_to_pass)} PASS_TO_PASS, "
                f"{len(made.broken_at_base)} broken at the base)")  # fmt: skip

    if _write_each(console, lines, write, lambda line: f"{line.source} ({line.where})", wrote) or errors:
        raise typer.Exit(1)


def _environment_and_backend(
    console: Any, package: list[str] | None, setup: list[str] | None, env: list[str] | None
) -> tuple[Any, Any]:
    """The task images' environment from ``--package`` / ``--setup`` / ``--env``, and the Docker backend (exit 2
    without one or on a malformed option)."""
    import pydantic

    from agentbon.config import SandboxConfig
    from agentbon.errors import AgentbonError
    from agentbon.sandbox import make_backend
    from agentbon.types import Environment

    variables: dict[str, str] = {}
    for item in env or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            console.print(f"[red]error:[/] --env {item!r}: expected NAME=VALUE")
            raise typer.Exit(2)
        variables[name] = value
    try:
        environment = Environment(python_packages=package or [], setup=setup or [], env=variables)
    except pydantic.ValidationError as e:
        console.print(f"[red]error:[/] --env: {e.errors()[0]['msg']}", markup=False, highlight=False)
        raise typer.Exit(2) from e
    try:
        return environment, make_backend(SandboxConfig())
    except AgentbonError as e:
        console.print(f"[red]error:[/] {e}")
        raise typer.Exit(2) from e


def _write_each(console: Any, items: list[Any], write: Any, name: Any, wrote: Any) -> int:
    """Write a task for each item; a refusal is printed with what it names and the others go on. Returns how many
    were refused."""
    from agentbon.errors import AgentbonError

    refused = 0
    for item in items:
        try:
            made = write(item)
        except AgentbonError as e:
            refused += 1
            console.print(f"[red]refused[/] {name(item)}: {e}", highlight=False)
            continue
        console.print(f"[green]wrote[/] {wrote(made)}", highlight=False)
    return refused


def register(app: typer.Typer) -> None:
    """Add ``agentbon tasks ...``."""
    app.add_typer(tasks_app, name="tasks", rich_help_panel="Tasks")
