"""`agentbon` CLI: sandbox commands (base image, task images, leftovers) and the top-level ``cleanup``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from agentbon.errors import AgentbonError

sandbox_app = typer.Typer(help="Sandbox images and containers.", no_args_is_help=True)

RunIdOption = Annotated[
    str | None, typer.Option("--run-id", help="Only this run's sandboxes.", rich_help_panel="Selection")
]


def _fail(error: Exception) -> typer.Exit:
    typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
    return typer.Exit(1)


@sandbox_app.command("base")
def base(
    force: Annotated[bool, typer.Option("--force", help="Rebuild even when the image exists.")] = False,
    method: Annotated[
        str, typer.Option(help="auto | dockerfile | rootfs (debootstrap + docker import).", rich_help_panel="Build")
    ] = "auto",
) -> None:
    """Build the base image (or confirm it is cached) and print its tag."""
    from agentbon.sandbox import docker_client, ensure_base_image

    if method not in ("auto", "dockerfile", "rootfs"):
        raise _fail(ValueError(f"--method {method!r}: expected auto, dockerfile or rootfs"))
    said: list[str] = []

    def say(line: str) -> None:
        said.append(line)
        typer.echo(line)

    try:
        started = time.monotonic()
        tag = ensure_base_image(docker_client(), force=force, method=method, say=say)  # type: ignore[arg-type]
    except AgentbonError as e:
        raise _fail(e) from e
    typer.echo(f"{tag} ({'built' if said else 'cached'}, {time.monotonic() - started:.1f}s)")


@sandbox_app.command("build")
def build(
    suite: Annotated[Path, typer.Argument(help="A task folder, a suite directory or a JSONL/SWE-bench file.")],
    task_id: Annotated[list[str] | None, typer.Option("--task", "-t", help="Only these task ids.")] = None,
    task_repo: Annotated[
        str | None,
        typer.Option(
            "--task-repo",
            help="A swebench 5.x task repository (local path, owner/name or GitHub URL) whose Dockerfiles build the "
            "SWE-bench instance images no registry has; a suite that is a task repository needs none.",
        ),
    ] = None,
) -> None:
    """Get every image the suite needs ready: in the engine, else pulled, else built; a summary of each."""
    from agentbon.console import make_console
    from agentbon.evaluate.images import Getter, needs
    from agentbon.sandbox import docker_client
    from agentbon.tasks import load_suite

    tasks, errors = load_suite(suite)
    for error in errors:
        typer.secho(f"skipped: {error}", fg=typer.colors.YELLOW, err=True)
    tasks = [t for t in tasks if not task_id or t.task_id in task_id]
    try:
        client = docker_client()
    except AgentbonError as e:
        raise _fail(e) from e
    console = make_console()
    wanted = needs(tasks)
    got = _get_all(Getter(client, suite, task_repo=task_repo), wanted, console)
    _summary(got, console)
    if any(g.outcome == "missing" for g in got) or errors:
        raise typer.Exit(1)


def _get_all(getter: Any, wanted: list[Any], console: Any) -> list[Any]:
    """Each needed image in turn, with a progress bar on a terminal and a line per step elsewhere."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if not console.is_terminal:
        getter.say = lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True)
        return [getter.get(need) for need in wanted]
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        bar = progress.add_task("images", total=len(wanted))
        getter.say = lambda line: progress.update(bar, description=line[:60])
        out = []
        for need in wanted:
            out.append(getter.get(need))
            progress.advance(bar)
    return out


def _summary(got: list[Any], console: Any) -> None:
    from rich.table import Table

    counts = {k: sum(g.outcome == k for g in got) for k in ("ready", "pulled", "built", "missing")}
    line = ", ".join(f"{n} {k}" for k, n in counts.items())
    if console.is_terminal:
        table = Table(title=f"{len(got)} image(s): {line}")
        for column in ("image", "tasks", "outcome", "how / why", "s"):
            table.add_column(column, overflow="fold")
        style = {"ready": "green", "pulled": "cyan", "built": "blue", "missing": "red"}
        for g in got:
            tasks = ", ".join(g.task_ids[:3]) + (" ..." if len(g.task_ids) > 3 else "")
            table.add_row(g.ref, tasks, f"[{style[g.outcome]}]{g.outcome}[/]", g.how, f"{g.seconds:.1f}")
        console.print(table)
        return
    for g in got:
        console.file.write(f"{g.ref}\t{g.outcome}\t{','.join(g.task_ids)}\t{g.how}\t{g.seconds:.1f}s\n")
    console.file.write(f"{len(got)} image(s): {line}\n")
    console.file.flush()


@sandbox_app.command("ls")
def ls() -> None:
    """List agentbon containers (any state)."""
    from agentbon.sandbox import docker_client
    from agentbon.sandbox.common import label_filters

    try:
        # The list's summaries (one call): a container removed while it is listed does not fail the listing.
        containers = docker_client().api.containers(all=True, filters={"label": label_filters(None)})
    except AgentbonError as e:
        raise _fail(e) from e
    for c in containers:
        labels = c.get("Labels") or {}
        name = (c.get("Names") or ["/?"])[0].lstrip("/")
        typer.echo(
            f"{name}\t{c.get('State', '?')}\trun={labels.get('agentbon.run_id', '-')}\t"
            f"rollout={labels.get('agentbon.rollout_id', '-')}\tpurpose={labels.get('agentbon.purpose', '-')}"
        )
    typer.echo(f"{len(containers)} agentbon container(s)")


def cleanup(
    run_id: RunIdOption = None,
    images: Annotated[bool, typer.Option("--images", help="Also remove task images (agentbon/task:*).")] = False,
) -> None:
    """Remove leftover agentbon sandboxes (containers and process sandboxes); print how many."""
    from agentbon.sandbox import reap

    labels = {"run_id": run_id} if run_id else None
    try:
        removed = reap(labels)
    except AgentbonError as e:
        raise _fail(e) from e
    scope = f" of run {run_id}" if run_id else ""
    typer.echo(f"removed {removed} sandbox(es){scope}")
    if images:
        typer.echo(f"removed {_remove_task_images()} task image(s)")


def _remove_task_images() -> int:
    import docker

    from agentbon.sandbox import docker_client
    from agentbon.sandbox.images import TASK_REPO

    client, removed = docker_client(), 0
    for image in client.images.list(name=TASK_REPO):
        for tag in image.tags:
            try:
                client.images.remove(tag)
                removed += 1
            except docker.errors.APIError as e:  # in use by a container: leave it
                typer.secho(f"kept {tag}: {e.explanation}", fg=typer.colors.YELLOW, err=True)
    return removed


sandbox_app.command("cleanup")(cleanup)


def register(app: typer.Typer) -> None:
    """Add ``agentbon sandbox ...`` and the top-level ``agentbon cleanup``."""
    app.add_typer(sandbox_app, name="sandbox", rich_help_panel="Sandboxes")
    app.command("cleanup", rich_help_panel="Sandboxes")(cleanup)
