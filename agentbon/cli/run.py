"""`agentbon run SUITE -n N`: N rollouts per task on Ray, verified, selected, reported; resumable.

Exit codes (docs/failure-taxonomy.md): 0 every rollout and verification finished; 2 bad input or a failed
preflight check (nothing recorded); 3 the run ended with infrastructure errors left (resume to finish them), or
a part it starts or joins (Ray, the model server, the engines) did not come up (one line naming it and the fix);
130 interrupted (resume to finish).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentbon.cli.options import (
    EXIT_INFRA_LEFT,
    EXIT_INTERRUPTED,
    ConfigFiles,
    Overrides,
    RayAddress,
    RunDir,
    exit_codes,
    load_suite_or_exit,
)
from agentbon.config import BATCHED_SLOTS, SERIAL_SLOTS

_RUN, _MODEL, _CLUSTER, _CONFIG, _OUT = "Run", "Model", "Cluster", "Config", "Output"


def make_factories() -> Any:
    """The components a run uses (the real ones; tests patch this one seam)."""
    from agentbon.orchestrate import Factories

    return Factories()


def endpoint_fields(endpoints: list[str] | None) -> dict[str, Any]:
    """``--endpoint`` given once sets ``model.endpoint``, as it always did; given several times, ``model.endpoints``.
    Either way it replaces the other field a config file may set (the command line wins, as for every option)."""
    if not endpoints:
        return {}
    if len(endpoints) == 1:
        return {"endpoint": endpoints[0], "endpoints": []}
    return {"endpoint": None, "endpoints": list(endpoints)}


def run(
    suite: Annotated[Path, typer.Argument(help="Task suite: a folder of tasks, a task folder, JSONL, or SWE-bench JSON/JSONL.")],
    n: Annotated[int | None, typer.Option("-n", "--n", help="Rollouts per task.", rich_help_panel=_RUN)] = None,
    budget: Annotated[
        int | None, typer.Option(help="Rollouts for the whole batch: each task gets run.budget_first, the rest goes to the tasks without a verified pass likeliest to gain, up to N each.", rich_help_panel=_RUN, min=1)
    ] = None,
    budget_tokens: Annotated[
        int | None, typer.Option(help="Tokens for the whole batch (prompt and completion), besides --budget.", rich_help_panel=_RUN, min=1)
    ] = None,
    config_files: ConfigFiles = None,
    overrides: Overrides = None,
    endpoint: Annotated[
        list[str] | None, typer.Option(help="OpenAI-compatible base URL; without it a local server is started. Repeat it for several servers of the model: each task's rollouts go to one (its prefix cache), spilling to the least-loaded at model.max_inflight.", rich_help_panel=_MODEL)
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name sent to the endpoint.", rich_help_panel=_MODEL)] = None,
    launcher: Annotated[
        str | None, typer.Option(help="What to start without an endpoint: auto (the one this machine runs faster: agentbon model choose), llama-cpp, vllm or vllm-actors (Ray engines).", rich_help_panel=_MODEL)
    ] = None,
    ray_address: RayAddress = None,
    concurrency: Annotated[
        int | None, typer.Option(help=f"Sandbox slots of the local Ray (rollouts at once); default {SERIAL_SLOTS} with llama-cpp, {BATCHED_SLOTS} with vLLM or an endpoint.", rich_help_panel=_CLUSTER)
    ] = None,
    run_dir: RunDir = None,
    run_id: Annotated[
        str | None, typer.Option(help="Run id (default: suite file name, model and a hash of the suite's task ids and of the settings a resume must keep).", rich_help_panel=_OUT)
    ] = None,
    accept_task_changes: Annotated[
        bool, typer.Option("--accept-task-changes", help="Resume although some tasks were redefined since the run started (the new definitions are recorded; rollouts made under the old ones stay in the run).", rich_help_panel=_RUN)
    ] = False,
) -> None:
    """Run N rollouts per task, verify, select and report; the same command on the same run resumes it."""
    from agentbon.config import load_config
    from agentbon.console import make_console
    from agentbon.orchestrate import resolve_run_id, run_batch
    from agentbon.orchestrate.cluster import sigterm_as_ctrl_c
    from agentbon.progress import make_display

    console = make_console(stderr=False)
    named = {k: v for k, v in {"name": model, "launcher": launcher}.items() if v is not None}
    model_direct = {**named, **endpoint_fields(endpoint)}
    with exit_codes():
        config = load_config(
            config_files, overrides, n=n, ray_address=ray_address, concurrency=concurrency,
            run_dir=str(run_dir) if run_dir else None, run_id=run_id, model=model_direct or None,
            accept_task_changes=accept_task_changes or None, budget=budget, budget_tokens=budget_tokens,
        )
    tasks = load_suite_or_exit(suite)
    run_id = resolve_run_id(str(suite), config, tasks)
    config = config.model_copy(update={"run_id": run_id})
    console.print(f"run {run_id}: {len(tasks)} tasks x {config.n} -> {Path(config.run_dir) / run_id}")
    display = make_display(run_id, console)
    sigterm_as_ctrl_c()  # a batch scheduler's SIGTERM stops the run like Ctrl-C: cleanly, resumable
    with exit_codes(), display:
        result = run_batch(tasks, config, suite=str(suite), factories=make_factories(), emit=display)
    _finish(console, result)


def _finish(console: Any, result: Any) -> None:
    saved = result.saved
    console.print(
        f"{result.planned} rollouts planned, {result.already_done} already done before this run; "
        f"wall {result.wall_s:.1f}s; run dir {result.path}"
    )
    if saved.rollouts_not_run:
        console.print(
            f"early stop: {len(set(saved.tasks))} tasks passed early; {saved.rollouts_not_run} rollouts not run "
            f"({len(saved.skipped)} never started, {len(saved.cancelled)} cancelled), "
            f"~{saved.sandbox_s:.0f} sandbox-seconds saved"
        )
    if result.interrupted:
        console.print("[yellow]interrupted[/]: sandboxes removed, store consistent; run the same command to resume")
        raise typer.Exit(EXIT_INTERRUPTED)
    if result.report is not None:
        from agentbon.report.terminal import print_summary

        print_summary(result.report, console)
        console.print(f"reports: {result.path / 'report.md'}, {result.path / 'report.html'}")
    elif result.report_error:
        console.print(f"[red]report failed[/]: {result.report_error}; rerun `agentbon report {result.path}`")
    left = result.infra_left
    if result.aborted:
        console.print(f"[red]run stopped[/]: {result.aborted}. Fix the cause, then run the same command to resume")
        raise typer.Exit(EXIT_INFRA_LEFT)
    if left.total:
        console.print(
            f"[red]infrastructure errors left[/]: {left.describe()}; not counted in any figure. "
            "Run the same command to retry them (exit code 3)"
        )
        raise typer.Exit(EXIT_INFRA_LEFT)


def register(app: typer.Typer) -> None:
    """Add ``agentbon run``."""
    app.command("run", rich_help_panel="Run")(run)
