"""`agentbon` CLI: `export swebench | pairs | branches` — a run's candidates in other tools' formats."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from agentbon.report.data import RunData
    from agentbon.store import RunStore

export_app = typer.Typer(help="Export a run: SWE-bench predictions, DPO pairs, winners as branches or patches.",
                         no_args_is_help=True)  # fmt: skip

RunDir = Annotated[Path, typer.Argument(help="The run directory (runs/<run_id>).", show_default=False)]
SelectorOpt = Annotated[
    str | None,
    typer.Option("--selector", help="Whose winners (default: the run's first selector).", rich_help_panel="Selection"),
]


FlaggedOpt = Annotated[
    str | None,
    typer.Option(
        "--flagged",
        help="Flagged candidates: mark (ship them with their flags and the files grading undid) or omit (leave out "
        "those with a flag select.allow_flags does not accept). Default: the run's export.flagged (mark).",
        rich_help_panel="Selection",
    ),
]


def _load(run_dir: Path) -> tuple[RunStore, RunData]:
    from agentbon.cli.report import open_store
    from agentbon.report.data import load_run

    store = open_store(run_dir)
    return store, load_run(store)


def _fail(e: Exception) -> None:
    typer.echo(f"error: {e}", err=True)
    raise typer.Exit(2) from e


@export_app.command("swebench")
def swebench(
    run_dir: RunDir,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Folder (default: RUN_DIR/exports/swebench).", rich_help_panel="Output"),
    ] = None,
    selector: SelectorOpt = None,
    flagged: FlaggedOpt = None,
) -> None:
    """Predictions JSONL for the SWE-bench harness: the selected candidate, and one file per rollout index."""
    from agentbon.errors import ExportError
    from agentbon.export import export_swebench

    store, data = _load(run_dir)
    try:
        files = export_swebench(data, out or store.path / "exports" / "swebench", selector, flagged)
    except ExportError as e:
        _fail(e)
    for name, path in files.items():
        typer.echo(f"{name}: {path}")


@export_app.command("pairs")
def pairs(
    run_dir: RunDir,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="JSONL file (default: RUN_DIR/exports/pairs.jsonl).", rich_help_panel="Output"
        ),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option("--format", help="conversational (message lists) or plain (strings).", rich_help_panel="Output"),
    ] = "conversational",
    content: Annotated[
        str, typer.Option(help="patch, or trajectory (the agent's turns after the prompt).", rich_help_panel="Output")
    ] = "patch",
    label: Annotated[
        str, typer.Option(help="Which verdict labels a candidate: grade or evidence.", rich_help_panel="Selection")
    ] = "grade",
    max_per_task: Annotated[
        int, typer.Option(help="Pairs per task at most (sampled).", rich_help_panel="Selection")
    ] = 8,
    seed: Annotated[int, typer.Option(help="Seed of the pair sampling.", rich_help_panel="Selection")] = 0,
    flagged: FlaggedOpt = None,
) -> None:
    """Preference pairs (passing vs failing candidate of a task, with test evidence) in TRL's DPO format."""
    from agentbon.export import export_pairs

    choices = {"--format": (fmt, ("conversational", "plain")), "--content": (content, ("patch", "trajectory")),
               "--label": (label, ("grade", "evidence"))}  # fmt: skip
    for flag, (value, allowed) in choices.items():
        if value not in allowed:
            raise typer.BadParameter(f"{value!r}: expected one of {', '.join(allowed)}", param_hint=flag)
    store, data = _load(run_dir)
    path = out or store.path / "exports" / "pairs.jsonl"
    from agentbon.errors import ExportError

    try:
        stats = export_pairs(store, data, path, fmt, content, label, max_per_task, seed, flagged)  # type: ignore[arg-type]
    except ExportError as e:
        _fail(e)
    skipped = ", ".join(f"{why}: {n}" for why, n in stats.skipped.items()) or "none"
    typer.echo(
        f"{stats.pairs} pairs from {stats.tasks_with_pairs} tasks ({stats.tasks_without} tasks without a pass/fail split; skipped: {skipped})"
    )
    typer.echo(str(path))


@export_app.command("branches")
def branches(
    run_dir: RunDir,
    repo: Annotated[
        list[Path] | None,
        typer.Option(
            "--repo",
            help="Target repository (repeatable); each task goes to the one holding its base commit.",
            rich_help_panel="Target",
        ),
    ] = None,
    patches: Annotated[
        Path | None,
        typer.Option(
            "--patches", help="Write <task>.patch files and winners.jsonl here instead.", rich_help_panel="Target"
        ),
    ] = None,
    selector: SelectorOpt = None,
    resolved_only: Annotated[
        bool, typer.Option("--resolved-only", help="Only winners the grade passed.", rich_help_panel="Selection")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Move a branch that exists with other content.", rich_help_panel="Target")
    ] = False,
    flagged: FlaggedOpt = None,
) -> None:
    """Winners as git branches agentbon/<run_id>/<task_id> (working tree untouched), or as patch files."""
    from agentbon.errors import ExportError
    from agentbon.export import export_branches, export_patches

    if bool(repo) == bool(patches):
        raise typer.BadParameter(
            "give --repo PATH (repeatable) or --patches DIR, not both", param_hint="--repo/--patches"
        )
    _, data = _load(run_dir)
    try:
        result = (
            export_patches(data, patches, selector, resolved_only, flagged)
            if patches
            else export_branches(data, repo or [], selector, resolved_only, force, flagged)
        )
    except ExportError as e:
        _fail(e)
    kind = "patch files" if patches else "branches"
    typer.echo(
        f"{len(result.created)} {kind} written, {len(result.unchanged)} unchanged, {len(result.skipped)} skipped, {len(result.failed)} failed"
    )
    for name in result.created:
        typer.echo(f"  + {name}")
    for task_id, what in result.flagged.items():
        typer.echo(f"  ! {task_id}: flagged {what}")
    for task_id, why in {**result.skipped, **result.failed}.items():
        typer.echo(f"  - {task_id}: {why}")
    if result.failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``agentbon export ...`` to the app."""
    app.add_typer(export_app, name="export", rich_help_panel="Results")
