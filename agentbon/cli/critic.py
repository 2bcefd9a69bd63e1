"""`agentbon critic ...`: train the classifier critic on run stores; evaluate critics (classifier, judge, prior)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentbon.files import write_atomic

if TYPE_CHECKING:
    from rich.table import Table

critic_app = typer.Typer(help="Critic outcome reward models: train, evaluate.", no_args_is_help=True)

RunDirs = Annotated[list[Path], typer.Argument(help="Run directories with graded rollouts (runs/<run_id>).")]
_TRAIN = "Training"
_JUDGE = "LLM judge"


def _metrics_table(title: str, rows: dict[str, dict[str, Any]]) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in ("critic", "rollouts", "resolved", "AUROC", "ECE", "Brier"):
        table.add_column(col, justify="left" if col == "critic" else "right")
    for name, m in rows.items():
        auroc = "n/a" if m["auroc"] is None else f"{m['auroc']:.3f}"
        table.add_row(name, str(m["n"]), str(m["positives"]), auroc, f"{m['ece']:.3f}", f"{m['brier']:.3f}")
    return table


@critic_app.command("train")
def train(
    runs: RunDirs,
    output: Annotated[Path, typer.Option("-o", "--output", help="critic.json, or a directory to hold it.")] = Path(
        "critic.json"
    ),
    text: Annotated[
        bool,
        typer.Option("--text/--no-text", help="Add MiniLM text embeddings (critic extra).", rich_help_panel=_TRAIN),
    ] = True,
    folds: Annotated[int, typer.Option(help="Folds, grouped by task.", min=2, rich_help_panel=_TRAIN)] = 5,
    l2: Annotated[float, typer.Option(help="L2 penalty on standardised weights.", rich_help_panel=_TRAIN)] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed of the task split.", rich_help_panel=_TRAIN)] = 0,
) -> None:
    """Train the classifier critic on graded rollouts; report AUROC and ECE on held-out tasks."""
    from agentbon.console import make_console
    from agentbon.critic.training import train as train_critic
    from agentbon.errors import AgentbonError

    console = make_console()
    try:
        model, report = train_critic(runs, text=text, l2=l2, folds=folds, seed=seed)
    except AgentbonError as e:
        console.print(f"[red]error:[/] {e}")
        raise typer.Exit(1) from e
    path = model.save(output)
    title = f"{report['split']}: {report['tasks']} tasks"
    rows = {"classifier (held-out)": report["held_out"], "evidence pass (baseline)": report["baseline_evidence_pass"]}
    console.print(_metrics_table(title, rows))
    console.print(f"saved {path} (refit on all {report['held_out']['n']} rollouts; text features: {text})")


@critic_app.command("eval")
def evaluate(
    runs: RunDirs,
    judge: Annotated[
        bool, typer.Option("--judge", help="Also score with the LLM judge.", rich_help_panel=_JUDGE)
    ] = False,
    endpoint: Annotated[
        str | None,
        typer.Option(
            help="Judge endpoint (OpenAI-compatible); default: start the local server.", rich_help_panel=_JUDGE
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Judge model name.", rich_help_panel=_JUDGE)] = None,
    limit: Annotated[
        int | None, typer.Option(help="Score at most this many rollouts (seeded sample).", rich_help_panel=_JUDGE)
    ] = None,
    text: Annotated[
        bool, typer.Option("--text/--no-text", help="Classifier text features.", rich_help_panel=_TRAIN)
    ] = True,
    folds: Annotated[int, typer.Option(help="Classifier folds, grouped by task.", min=2, rich_help_panel=_TRAIN)] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the split and the sample.")] = 0,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the figures as JSON here.")] = None,
) -> None:
    """Compare critics on the same graded rollouts: classifier (held-out tasks), LLM judge, prior, evidence."""
    import numpy as np

    from agentbon.config import ModelConfig
    from agentbon.console import make_console
    from agentbon.critic import HeuristicPrior, LLMJudge, calibration
    from agentbon.critic.training import featurize, load_examples, out_of_fold
    from agentbon.errors import AgentbonError
    from agentbon.store import RunStore

    console = make_console()
    try:
        examples = load_examples(runs)
        task_ids = [e.task.task_id for e in examples]
        if len(set(task_ids)) < 2:
            raise AgentbonError("evaluation needs graded rollouts from at least 2 tasks")
        X, names = featurize(examples, text)
        y = np.asarray([e.label for e in examples])
        scores = {"classifier (held-out tasks)": out_of_fold(X, y, task_ids, names, text, 1.0, folds, seed)}
    except AgentbonError as e:
        console.print(f"[red]error:[/] {e}")
        raise typer.Exit(1) from e
    prior = HeuristicPrior()
    scores["heuristic-prior"] = np.asarray([prior.score(e.task, e.rollout, e.evidence) for e in examples])
    scores["evidence pass"] = np.asarray(
        [float(e.evidence is not None and e.evidence.status == "pass") for e in examples]
    )
    keep = np.arange(len(examples))
    if limit is not None and limit < len(examples):
        keep = np.sort(np.random.default_rng(seed).choice(len(examples), size=limit, replace=False))
    if judge:
        from agentbon.models import make_model, serving

        config = ModelConfig(endpoint=endpoint) if model is None else ModelConfig(endpoint=endpoint, name=model)
        stores = {str(RunStore(d).run_id): RunStore(d) for d in runs}
        with serving(config, log=console.print) as served, make_model(served) as client:
            llm = LLMJudge(client, trajectories=lambda rid: _trajectory(stores, examples, rid))
            judged = np.full(len(examples), np.nan)
            with console.status(f"judging {len(keep)} rollouts..."):
                for i in keep:
                    ex = examples[i]
                    judged[i] = llm.score(ex.task, ex.rollout, ex.evidence)
        scores[f"judge ({served.name})"] = judged
        console.print(f"judge scores from: {llm.sources}")
    rows = {name: calibration.report(y[keep], s[keep]) for name, s in scores.items()}
    console.print(_metrics_table(f"{len(keep)} graded rollouts, {len(set(task_ids))} tasks", rows))
    if json_out:
        write_atomic(json_out, json.dumps({"runs": [str(r) for r in runs], "metrics": rows}, indent=1))


def _trajectory(stores: dict, examples: list, rollout_id: str) -> list:
    run_id = next((e.rollout.run_id for e in examples if e.rollout.rollout_id == rollout_id), None)
    store = stores.get(run_id)
    return store.trajectory(rollout_id) if store is not None else []


def register(app: typer.Typer) -> None:
    """Add ``agentbon critic ...``."""
    app.add_typer(critic_app, name="critic", rich_help_panel="Critic")
