"""The ``agentbon`` command: typer subcommands, each group in its own module."""

from __future__ import annotations

import typer

from agentbon.cli import critic, eval, export, model, report, run, sandbox, tasks

app = typer.Typer(
    name="agentbon",
    help="Best-of-N agentic coding rollouts as a batch job: run, verify, select, report.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

for module in (run, eval, report, sandbox, tasks, model, critic, export):
    module.register(app)


@app.command(rich_help_panel="Info")
def version() -> None:
    """Print agentbon's version."""
    from agentbon import __version__

    typer.echo(__version__)


def main() -> None:
    app()
