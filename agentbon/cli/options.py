"""Options that several commands share (``run``, ``eval``): declared once, so their flags and help agree."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from agentbon.errors import EXIT_INFRA_LEFT, EXIT_INPUT, EXIT_INTERRUPTED

CLUSTER, CONFIG, OUTPUT = "Cluster", "Config", "Output"
"""Help panels."""

ConfigFiles = Annotated[
    list[Path] | None, typer.Option("-f", "--config", help="YAML config file (repeatable; later wins).", rich_help_panel=CONFIG)
]
Overrides = Annotated[
    list[str] | None, typer.Option("-c", help="Override a setting: -c key.sub=value (repeatable).", rich_help_panel=CONFIG)
]
RayAddress = Annotated[
    str | None, typer.Option(help="Join this Ray cluster (host:port or auto); default: a local Ray.", rich_help_panel=CLUSTER)
]
RunDir = Annotated[Path | None, typer.Option(help="Where run directories live.", rich_help_panel=OUTPUT)]


def load_suite_or_exit(suite: Path) -> list[Any]:
    """The suite's valid tasks; each bad task is named on stderr, and a suite without a valid task exits 2."""
    return load_suite_and_errors_or_exit(suite)[0]


def load_suite_and_errors_or_exit(suite: Path) -> tuple[list[Any], list[Any]]:
    """The suite's valid tasks and its load errors (each also named on stderr); no valid task exits 2."""
    from agentbon.tasks import load_suite

    tasks, errors = load_suite(suite)
    for error in errors:
        typer.echo(f"task error: {error}", err=True)
    if not tasks:
        typer.echo(f"error: {suite}: no valid tasks", err=True)
        raise typer.Exit(EXIT_INPUT)
    return tasks, errors


@contextmanager
def exit_codes() -> Iterator[None]:
    """Around a command's work: bad input (``ConfigError``, a ``MissingExtra`` to install) exits 2, a part that did
    not start or join (``StartFailure``: Ray, the model server, the engines) 3, Ctrl-C 130; each said in one line on
    stderr (docs/failure-taxonomy.md, "Exit codes")."""
    from agentbon.errors import ConfigError, MissingExtra, StartFailure

    try:
        yield
    except (ConfigError, MissingExtra) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(EXIT_INPUT) from e
    except StartFailure as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(EXIT_INFRA_LEFT) from e
    except KeyboardInterrupt:  # before or after the driver loop (which handles its own): nothing half-recorded
        typer.echo("interrupted; run the same command to resume", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
