"""`agentbon eval SUITE --predictions FILE`: grade patches made anywhere, as `agentbon run` grades its own.

The report is the SWE-bench harness's, in its buckets (docs/swebench.md, "agentbon eval"). Exit codes: 0 every
prediction graded (resolved, unresolved, or an error instance the harness would also call one: a patch that
applies no way, a test run past the timeout); 2 bad input (a predictions file that cannot be read, predictions of
several models without ``--model``, a failed preflight such as a missing image: nothing graded; or entries that
are not graded, each named — ids not in the suite, earlier duplicates, predictions for tasks that did not load —
the rest graded); 3 some predictions could not be graded (infrastructure: run the same command again to retry
them), or Ray did not start or join (one line naming it and the fix); 130 interrupted (resume).

Several files (``--predictions A.jsonl B.jsonl``), or ``--ensemble`` on one, grade every prediction as a rollout of
its instance and write the run's best-of-N report (docs/swebench.md, "Several systems"); exit codes as above, 2 also
for predictions of tasks that did not load (left out).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentbon.cli.options import (
    ConfigFiles,
    Overrides,
    RayAddress,
    RunDir,
    exit_codes,
    load_suite_and_errors_or_exit,
)
from agentbon.console import listed, say

_INPUT, _CLUSTER, _CONFIG, _OUT = "Input", "Cluster", "Config", "Output"
INTERRUPTED = "interrupted: run the same command to resume"


def make_factories() -> Any:
    """The components eval uses (the real ones; tests patch this one seam). No model server is ever started."""
    from agentbon.orchestrate import Factories

    return Factories()


def eval_command(
    suite: Annotated[Path, typer.Argument(help="Task suite the predictions are for: SWE-bench JSON/JSONL or agentbon tasks.")],
    predictions: Annotated[
        list[Path], typer.Option("--predictions", "-p", help="Predictions: JSON list, JSON object by id, or JSONL with instance_id, model_name_or_path, model_patch. Several files (-p A -p B, or --predictions A B): an ensemble.", rich_help_panel=_INPUT)
    ],
    more: Annotated[
        list[Path] | None, typer.Argument(help="More predictions files (as in --predictions A.jsonl B.jsonl): an ensemble.", show_default=False)
    ] = None,
    ensemble: Annotated[
        bool, typer.Option("--ensemble", help="Grade every prediction as a rollout of its instance (each model of each file a system, each repeated id a sample) and report best-of-N selection across them; implied by several files.", rich_help_panel=_INPUT)
    ] = False,
    model: Annotated[
        str | None, typer.Option(help="Grade only this model_name_or_path (needed when the file holds several), not with an ensemble.", rich_help_panel=_INPUT)
    ] = None,
    config_files: ConfigFiles = None,
    overrides: Overrides = None,
    concurrency: Annotated[
        int | None, typer.Option(help="Verifications at once (verify.concurrency).", rich_help_panel=_CLUSTER)
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout", "-t", min=1,
            help="Seconds one instance's tests may run, as the harness's --timeout (verify.timeout_s). Default: "
            "the harness's 1800, with no CPU cap (sandbox.cpus), for SWE-bench instances; verify.timeout_s otherwise.",
            rich_help_panel=_CONFIG,
        ),
    ] = None,
    ray_address: RayAddress = None,
    run_dir: RunDir = None,
    run_id: Annotated[
        str | None, typer.Option(help="Run id (default: eval-<suite>-<model>-<hash of the predictions>); an existing run is resumed.", rich_help_panel=_OUT)
    ] = None,
) -> None:
    """Grade given patches in fresh sandboxes (the same verifier as `run`); write eval_report.json; resumable.

    The report is the SWE-bench harness's (make_run_report), key for key and in its buckets: a patch that
    applies no way (after the harness's fallbacks), a whitespace-only one and a test run past the timeout are
    error instances; the last prediction of a duplicated id is graded; total_instances counts every record of the
    suite. Where agentbon differs: an id not in the suite, or an earlier duplicate, is an input error naming its
    line and the rest is graded (exit 2; the harness refuses a file with an unknown id); a file with several models
    needs --model; the guard and the second check can fail a patch the harness resolves (docs/swebench.md).

    Several files, or --ensemble: every prediction is a rollout of its instance (each model of each file a system,
    each repeated id a sample; a missing one an empty patch, unresolved), graded with the selection evidence, and
    the run's best-of-N report (coverage@k, selected@k, selection loss) covers selection across them.
    """
    from agentbon.config import load_config
    from agentbon.console import make_console
    from agentbon.evaluate import evaluate
    from agentbon.evaluate.run import unloaded_tasks
    from agentbon.evaluate.table import print_report
    from agentbon.orchestrate.cluster import sigterm_as_ctrl_c
    from agentbon.progress import make_display

    console = make_console()
    files = [*predictions, *(more or [])]
    if (ensemble or len(files) > 1) and model is not None:
        typer.echo("error: --model picks one model for a harness report; an ensemble grades every model of every "
                   "file (split the file to leave one out)", err=True)  # fmt: skip
        raise typer.Exit(2)
    with exit_codes():
        config = load_config(
            config_files, overrides, ray_address=ray_address, run_dir=str(run_dir) if run_dir else None,
            run_id=run_id, verify={k: v for k, v in (("concurrency", concurrency), ("timeout_s", timeout)) if v} or None,
        )
    tasks, load_errors = load_suite_and_errors_or_exit(suite)
    sigterm_as_ctrl_c()
    display = make_display(run_id or "eval", console)
    if ensemble or len(files) > 1:
        _ensemble(console, display, tasks, files, config, suite, unloaded_tasks(load_errors, tasks))
    with exit_codes(), display:
        result = evaluate(
            tasks, files[0], config, suite=str(suite), model=model, factories=make_factories(), emit=display,
            unloaded=unloaded_tasks(load_errors, tasks),
        )
    print_report(result.report, console)
    say(console, f"report: {result.report_path}")
    _explain(console, result)
    raise typer.Exit(result.exit_code)


def _ensemble(
    console: Any, display: Any, tasks: list[Any], files: list[Path], config: Any, suite: Path, unloaded: dict[str, str]
) -> None:
    """Grade the files as an ensemble: the run's report (selection across systems) and one harness report each."""
    from agentbon.evaluate.ensemble_run import evaluate_ensemble
    from agentbon.evaluate.table import print_systems

    with exit_codes(), display:
        result = evaluate_ensemble(
            tasks, [str(f) for f in files], config, suite=str(suite), factories=make_factories(), emit=display,
            unloaded=unloaded,
        )
    print_systems(result, console)
    if result.summary is not None:
        from agentbon.report.terminal import print_summary

        print_summary(result.summary, console)
        say(console, f"reports: {result.path / 'report.md'}, {result.path / 'report.html'}")
    if result.interrupted:
        say(console, INTERRUPTED)
    elif result.exit_code == 3:
        say(console, "some rollouts not graded or selected (infrastructure): run the same command to retry them (exit 3)")
    raise typer.Exit(result.exit_code)


def _explain(console: Any, result: Any) -> None:
    """Say why the exit code is not 0, naming what was not graded."""
    if result.interrupted:
        return say(console, INTERRUPTED)
    if result.batch is not None and result.batch.aborted:
        say(console, f"run stopped: {result.batch.aborted}")
    not_graded, n = result.report.retry_ids, len(result.input_errors)
    if not_graded:
        say(console, f"{len(not_graded)} prediction(s) not graded: {listed(not_graded, 20)}; run the same command to "
                     "retry them (exit 3)")  # fmt: skip
    elif result.exit_code == 2:
        say(console, f"{n} entr{'y' if n == 1 else 'ies'} of the predictions file not graded (input errors above), or "
                     "predictions for tasks that did not load (task errors); everything else was graded (exit 2)")  # fmt: skip


def register(app: typer.Typer) -> None:
    """Add ``agentbon eval``."""
    app.command("eval", rich_help_panel="Run")(eval_command)
