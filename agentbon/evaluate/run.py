"""Grade given patches with the batch runner: predictions in, ``eval_report.json`` out (``agentbon eval``).

Nothing here verifies anything itself. The predictions are written into a run store as finished rollouts
(``seed``), and ``run_batch`` does the rest as for ``agentbon run``: preflight (images included; no model
checks, as no model server is started), fresh sandboxes on Ray, the same verifier, guard and dedupe of
identical patches, infra retries, resume.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentbon.config import RunConfig
from agentbon.errors import EXIT_INFRA_LEFT, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK
from agentbon.evaluate.match import Matched, match
from agentbon.evaluate.predictions import InputError, read_predictions
from agentbon.evaluate.report import REPORT, EvalReport, build_eval_report
from agentbon.evaluate.seed import Seeder, conflicts, unfinished
from agentbon.evaluate.service import eval_factories
from agentbon.store import RunStore
from agentbon.types import Task, TaskLoadError, patch_hash


@dataclass
class EvalResult:
    """What one ``agentbon eval`` invocation did."""

    run_id: str
    path: Path
    report: EvalReport
    report_path: Path
    input_errors: list[InputError] = field(default_factory=list)
    recorded: list[str] = field(default_factory=list)
    """Predictions this invocation wrote into the run (the others were there from an earlier one)."""
    batch: Any = None
    """The ``RunResult`` of the batch, or None when nothing was left to grade."""

    @property
    def interrupted(self) -> bool:
        return bool(self.batch and self.batch.interrupted)

    @property
    def exit_code(self) -> int:
        """``exit_code`` of what was not graded (infra: run again) and of bad input entries or predictions for tasks
        that did not load (error instances the harness would also call errors are graded)."""
        unloaded = any(e.error == "task_not_loaded" for e in self.report.instances.values())
        return exit_code(self.batch, bool(self.report.retry_ids), bool(self.input_errors) or unloaded)


def exit_code(batch: Any, not_graded: bool, bad_input: bool) -> int:
    """130 the batch was interrupted; 3 something not graded (infrastructure: run again) or the batch stopped; 2 bad
    input; else 0."""
    if batch is not None and batch.interrupted:
        return EXIT_INTERRUPTED
    if not_graded or (batch is not None and batch.aborted):
        return EXIT_INFRA_LEFT
    return EXIT_INPUT if bad_input else EXIT_OK


HARNESS_TEST_TIMEOUT_S = 1800.0
"""The harness's ``--timeout`` default (``swebench.harness.run_evaluation``): seconds one instance's tests may run."""


def refuse_inert(config: RunConfig) -> None:
    """Refuse what an eval never reads (agentbon/inert.py, command ``eval``: the model's server, sampling and name;
    its client too unless a selector asks the judge), and a judge without an endpoint: an eval starts no server."""
    from agentbon.errors import ConfigError
    from agentbon.inert import Mode, inert, judges, refusal

    problems = inert(Mode(config, config.model.launcher, command="eval"))
    if problems:
        raise ConfigError(refusal(problems))
    if judges(config) and not config.model.urls():
        who = f"select.critic={config.select.critic}" if config.select.critic in ("judge", "scale-judge") else (
            f"a tournament with select.comparator={config.select.comparator}"
        )
        raise ConfigError(
            f"{who} needs model.endpoint (or model.endpoints) with agentbon eval: it starts no model "
            "server. Give the judge's endpoint, or choose another critic (select.comparator=critic for a tournament)"
        )


def eval_config(config: RunConfig, model: str, tasks: list[Task] | None = None) -> RunConfig:
    """The run config of an eval: one rollout per task (the prediction), the model named, cheap selection.

    A suite of SWE-bench instances is graded under the harness's limits unless the config sets them: tests may run
    ``HARNESS_TEST_TIMEOUT_S`` (``verify.timeout_s``) and the container has no CPU cap (``sandbox.cpus``), as the
    harness's containers have none: a slow instance the harness resolves is resolved here too.
    """
    select, update = config.select, dict[str, Any]()
    if "selectors" not in select.model_fields_set:  # one candidate per task: nothing to select between
        select = select.model_copy(update={"selectors": ["oracle"]})
    if "ray_niceness" not in config.model_fields_set:  # no model server shares the CPUs
        update["ray_niceness"] = 0
    if tasks and all(t.kind == "swebench" for t in tasks):
        if "timeout_s" not in config.verify.model_fields_set:
            update["verify"] = config.verify.model_copy(update={"timeout_s": HARNESS_TEST_TIMEOUT_S})
        if "cpus" not in config.sandbox.model_fields_set:
            update["sandbox"] = config.sandbox.model_copy(update={"cpus": None})
    return config.model_copy(
        update={
            "n": 1, "early_stop": False, "select": select, "model": config.model.model_copy(update={"name": model}),
            **update,
        }
    )


def eval_run_id(suite: str, model: str, matched: Matched, tasks: list[Task] | None) -> str:
    """``eval-<suite>-<model>-<hash of the suite's task ids and the predictions graded>``: the same predictions for
    the same suite find the same run again (``tasks`` None: the name of versions before the suite was part of it)."""
    from agentbon.orchestrate.resume import run_name, suite_digest

    digest = hashlib.sha256(suite_digest(tasks).encode() if tasks is not None else b"")
    for tid, p in sorted(matched.graded.items()):
        digest.update(f"{tid}\0{patch_hash(p.model_patch)}\0".encode())
    name = run_name(f"eval-{Path(suite).stem}-{model}", 150)
    return f"{name}-{digest.hexdigest()[:8]}"


def prepare(
    predictions_file: str | Path, tasks: list[Task], *, model: str | None = None, suite: str = "the suite",
    unloaded: dict[str, str] | None = None,
) -> tuple[Matched, list[InputError]]:
    """Read and match the predictions: what to grade, and an error per entry that is not graded."""
    file = str(predictions_file)
    predictions, errors = read_predictions(file)
    matched = match(predictions, tasks, file, model=model, suite=suite, unloaded=unloaded)
    return matched, errors + matched.errors


def evaluate(
    tasks: list[Task], predictions_file: str | Path, config: RunConfig, *, suite: str = "suite",
    model: str | None = None, factories: Any = None, emit: Any = None, unloaded: dict[str, str] | None = None,
) -> EvalResult:
    """Grade every prediction of ``predictions_file`` against the suite's ``tasks``; write ``eval_report.json``.

    ``unloaded``: the suite's records that did not load (id → why; ``unloaded_tasks``): counted in the dataset,
    and a prediction for one is an error instance. Raises ``ConfigError`` (``PredictionsFileError``,
    ``SeveralModels``, ``PreflightError``) with nothing graded.
    """
    from agentbon.orchestrate import run_batch
    from agentbon.orchestrate.resume import earlier_run

    refuse_inert(config)
    file = str(predictions_file)
    matched, input_errors = prepare(file, tasks, model=model, suite=suite, unloaded=unloaded)
    config = eval_config(config, matched.model, tasks)
    run_id = config.run_id or earlier_run(
        config.run_dir, eval_run_id(suite, matched.model, matched, tasks),
        eval_run_id(suite, matched.model, matched, None), [t for t in tasks if t.task_id in matched.graded],
    )  # fmt: skip
    config = config.model_copy(update={"run_id": run_id})
    store = RunStore(Path(config.run_dir) / run_id)
    refused = conflicts(store, matched.graded, file)
    for error in refused:
        matched.graded.pop(error.instance_id or "", None)
    input_errors = sorted(input_errors + refused, key=lambda e: (e.line or 0, e.key))
    batch, recorded = None, []
    # Nothing left to grade (a resume of a finished eval): no Ray, no sandboxes, only the report again.
    if unfinished(store, [f"{tid}/0" for tid in matched.graded]):
        graded_tasks = [t for t in tasks if t.task_id in matched.graded]
        seeder = Seeder(run_id, matched.graded)
        batch = run_batch(
            graded_tasks, config, suite=suite, factories=eval_factories(factories), emit=emit, before_drive=seeder
        )
        recorded = seeder.written
    report = build_eval_report(store, matched, tasks, input_errors, file, unloaded)
    return EvalResult(
        run_id=run_id, path=store.path, report=report, report_path=report.write(store.path / REPORT),
        input_errors=input_errors, recorded=recorded, batch=batch,
    )


def unloaded_tasks(errors: list[TaskLoadError], tasks: list[Task]) -> dict[str, str]:
    """The suite's records that did not load, id → the first problem (records without an id are left out)."""
    loaded = {t.task_id for t in tasks}
    out: dict[str, str] = {}
    for e in errors:
        if e.task_id and e.task_id not in loaded:
            out.setdefault(e.task_id, str(e))
    return out
