"""`agentbon` CLI: `report` — re-render a run's tables, summary.json, report.md and report.html from its store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentbon.files import write_atomic

if TYPE_CHECKING:
    from agentbon.report.schema import RunReport
    from agentbon.store import RunStore

DEFAULT_TABLES = ("headline", "flags", "scaling", "selectors")
"""Tables ``agentbon report`` prints without ``--all`` (``flags`` only exists when a candidate was flagged)."""


def open_store(path: Path) -> RunStore:
    """The run store at ``path``, or a clear error when it is not a run directory."""
    from agentbon.store import EVENTS, RunStore

    if not path.is_dir():
        raise typer.BadParameter(f"{path}: no such run directory", param_hint="RUN_DIR")
    if not (path / EVENTS).exists() and not (path / "tasks.jsonl").exists():
        raise typer.BadParameter(f"{path}: not a run directory (no {EVENTS} or tasks.jsonl)", param_hint="RUN_DIR")
    return RunStore(path)


def _summary(path: Path, overrides: dict) -> RunReport:
    from agentbon.errors import ConfigError
    from agentbon.report import build_report

    try:
        return build_report(open_store(path), **overrides)
    except ConfigError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e


def _written_summary(path: Path, overrides: dict) -> RunReport:
    """A run's ``summary.json`` read back through its version check (``read_summary``: a file of a version this
    agentbon does not read is an error naming the command that re-renders it); built from the store as ``report``
    builds it where the run has none yet or a statistic is overridden."""
    from agentbon.errors import ConfigError
    from agentbon.report import build_report, read_summary

    store = open_store(path)
    written = store.path / "summary.json"
    try:
        if written.exists() and all(v is None for v in overrides.values()):
            return read_summary(written)
        return build_report(store, **overrides)
    except ConfigError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e


def report(
    run_dir: Annotated[
        Path | None, typer.Argument(help="The run directory (runs/<run_id>).", show_default=False)
    ] = None,
    compare: Annotated[
        tuple[Path, Path] | None,
        typer.Option("--compare", help="Put two runs side by side: --compare RUN_A RUN_B (e.g. last night, tonight): headline figures, then per task what changed (newly solved / failing, flaky tests). With --out, compare.md and compare.html. Reads each run's summary.json where it has one (a file of another version is an error: re-render it), else builds it from the store.", rich_help_panel="Compare"),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Write the files here instead of the run directory.", rich_help_panel="Output"
        ),
    ] = None,
    no_write: Annotated[
        bool, typer.Option("--no-write", help="Print only; write no file.", rich_help_panel="Output")
    ] = False,
    show_all: Annotated[
        bool, typer.Option("--all", help="Print every table, not just the headline ones.", rich_help_panel="Output")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print summary.json to stdout instead of tables.", rich_help_panel="Output")
    ] = False,
    bootstrap: Annotated[
        int | None, typer.Option(help="Bootstrap resamples (default: config, 1000).", rich_help_panel="Statistics")
    ] = None,
    confidence: Annotated[
        float | None, typer.Option(help="Interval width, e.g. 0.9.", rich_help_panel="Statistics")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Bootstrap seed.", rich_help_panel="Statistics")] = None,
    soft_bon: Annotated[
        str | None,
        typer.Option(help="soft-bon's selected@k: auto, exact or estimate (default: config, auto).",
                     rich_help_panel="Statistics"),  # fmt: skip
    ] = None,
    majority: Annotated[
        str | None,
        typer.Option(help="majority's selected@k: auto, exact or estimate (default: config, auto).",
                     rich_help_panel="Statistics"),  # fmt: skip
    ] = None,
    rl_training_cost: Annotated[
        float | None,
        typer.Option(help="Cost of an RL run, for the break-even (report's cost unit).", rich_help_panel="Cost"),
    ] = None,
    usd_per_mtok_prompt: Annotated[
        float | None, typer.Option(help="USD per 1M prompt tokens.", rich_help_panel="Cost")
    ] = None,
    usd_per_mtok_completion: Annotated[
        float | None, typer.Option(help="USD per 1M completion tokens.", rich_help_panel="Cost")
    ] = None,
    usd_per_mtok_cached: Annotated[
        float | None, typer.Option(help="USD per 1M cached prompt tokens.", rich_help_panel="Cost")
    ] = None,
    usd_per_sandbox_hour: Annotated[
        float | None, typer.Option(help="USD per sandbox hour.", rich_help_panel="Cost")
    ] = None,
) -> None:
    """Re-render a run's report from its store (nothing is re-run): tables, summary.json, report.md, report.html."""
    from agentbon.console import make_console
    from agentbon.report import write_reports
    from agentbon.report.compare import compare_table
    from agentbon.report.markdown import md_table
    from agentbon.report.terminal import print_summary, rich_table

    overrides = dict(bootstrap=bootstrap, confidence=confidence, seed=seed, soft_bon=soft_bon, majority=majority, rl_training_cost=rl_training_cost,
                     usd_per_mtok_prompt=usd_per_mtok_prompt, usd_per_mtok_completion=usd_per_mtok_completion,
                     usd_per_mtok_cached=usd_per_mtok_cached, usd_per_sandbox_hour=usd_per_sandbox_hour)  # fmt: skip
    console = make_console()
    if compare:
        from agentbon.report.html import render_tables_html
        from agentbon.report.nightly import changes_table

        a, b = (_written_summary(p, overrides) for p in compare)
        store_a, store_b = (open_store(p) for p in compare)
        changes = changes_table(store_a, store_b, a.primary_selector, b.primary_selector)
        tables = [compare_table(a, b), changes]
        for table in tables:
            console.print(rich_table(table))
        if out and not no_write:
            out.mkdir(parents=True, exist_ok=True)
            write_atomic(out / "compare.md", "\n".join(md_table(t, level=1) for t in tables))
            write_atomic(out / "compare.html", render_tables_html(f"{a.run_id} → {b.run_id}", tables))
            console.print(f"wrote {out / 'compare.md'} and {out / 'compare.html'}")
        return
    if run_dir is None:
        raise typer.BadParameter("give a RUN_DIR, or --compare RUN_A RUN_B", param_hint="RUN_DIR")
    summary = _summary(run_dir, overrides)
    if as_json:
        typer.echo(json.dumps(summary.to_dict(), indent=1))
    else:
        print_summary(summary, console, None if show_all else DEFAULT_TABLES)
    if not no_write:
        paths = write_reports(open_store(run_dir), summary, out)
        note = "wrote " + ", ".join(str(p) for p in paths.values())
        if as_json:
            typer.echo(note, err=True)  # stdout stays pure JSON
        else:
            console.print(note)


def register(app: typer.Typer) -> None:
    """Add ``agentbon report`` to the app."""
    app.command(rich_help_panel="Results")(report)
