"""A whole batch: open the run store, join Ray, make sure of a model endpoint, plan, drive, report."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentbon.config import RunConfig
from agentbon.orchestrate.cluster import connect, reap_everywhere, settle
from agentbon.orchestrate.driver import Driver
from agentbon.orchestrate.early_stop import Saved, add
from agentbon.orchestrate.events import (
    Display,
    EarlyStop,
    End,
    LauncherChosen,
    ModelStats,
    Note,
    PlanMade,
    Recorder,
    Start,
    Warning,
)
from agentbon.orchestrate.factories import Factories
from agentbon.orchestrate.plan import ROLES, plan_run
from agentbon.orchestrate.resume import check_resumable, check_task_changes, resolve_run_id
from agentbon.orchestrate.selection_stage import SelectionStage
from agentbon.preflight import require_preflight
from agentbon.store import RunStore
from agentbon.types import Task

if TYPE_CHECKING:
    from agentbon.report.schema import RunReport

log = logging.getLogger(__name__)


def endpoint_warning(config: RunConfig) -> str | None:
    """A warning when rollouts on other machines could not reach a loopback model endpoint (any of several)."""
    from urllib.parse import urlparse

    from agentbon.orchestrate.cluster import alive_nodes

    loopback = [url for url in config.model.urls() if urlparse(url).hostname in ("127.0.0.1", "localhost", "::1")]
    nodes = len(alive_nodes()) if loopback else 0
    if nodes < 2:
        return None
    if not config.model.endpoints:
        return (
            f"model endpoint {loopback[0]} is on this machine's loopback, but the cluster has "
            f"{nodes} nodes: rollouts elsewhere cannot reach it (give --endpoint a reachable address)"
        )
    return (
        f"model endpoint(s) {', '.join(loopback)} of {len(config.model.endpoints)} are on this machine's loopback, but "
        f"the cluster has {nodes} nodes: rollouts elsewhere cannot reach them, and the tasks routed "
        "there fail (give each --endpoint an address the other nodes reach)"
    )


@dataclass
class InfraLeft:
    """What a run leaves undone for infrastructure reasons: run again (resume) to finish it."""

    rollouts: dict[str, int] = field(default_factory=dict)
    """Rollouts whose final record is ``infra_error``, by error kind."""
    verdicts: dict[str, int] = field(default_factory=dict)
    """Verifications (rollout and role) whose final verdict is ``infra_error``, by error kind."""
    tasks: dict[str, int] = field(default_factory=dict)
    """Tasks whose environment could not be prepared (their rollouts not run), by error kind."""
    selections: dict[str, int] = field(default_factory=dict)
    """Selections (task and selector) that failed on infrastructure, by error kind."""

    @property
    def total(self) -> int:
        return sum(sum(counts.values()) for counts in (self.rollouts, self.verdicts, self.tasks, self.selections))

    def describe(self) -> str:
        """``3 rollouts (SandboxGone 2, ServerFailure 1), 1 verification (EngineUnavailable 1)``."""
        parts = []
        for one, many, counts in (
            ("rollout", "rollouts", self.rollouts), ("verification", "verifications", self.verdicts),
            ("task not prepared", "tasks not prepared", self.tasks), ("selection", "selections", self.selections),
        ):  # fmt: skip
            if counts:
                n = sum(counts.values())
                kinds = ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
                parts.append(f"{n} {one if n == 1 else many} ({kinds})")
        return ", ".join(parts)


@dataclass
class RunResult:
    """What one invocation did."""

    run_id: str
    path: Path
    planned: int = 0
    """Rollouts this invocation set out to run."""
    already_done: int = 0
    """Rollouts finished by an earlier invocation (resume)."""
    saved: Saved = field(default_factory=Saved)
    interrupted: bool = False
    aborted: str | None = None
    """Why the driver stopped the run itself (infra errors in a row), or None."""
    wall_s: float = 0.0
    report: RunReport | None = None
    """The run's summary (``summary.json``), when the report was written."""
    report_error: str | None = None
    infra_left: InfraLeft = field(default_factory=lambda: InfraLeft())
    """Rollouts and verifications whose last attempt failed on infrastructure (the run stays resumable)."""


def infra_left(store: RunStore, tasks: list[Task]) -> InfraLeft:
    """Count what the store leaves at ``infra_error`` for these tasks (last record of each rollout and verdict), the
    tasks whose preparation failed last, and the selections whose latest attempt failed on infrastructure."""
    ids = {t.task_id for t in tasks}
    out = InfraLeft()
    rollouts = {rid: r for rid, r in store.rollouts().items() if r.task_id in ids}
    for r in rollouts.values():
        if r.status == "infra_error":
            out.rollouts[r.exit_status or "?"] = out.rollouts.get(r.exit_status or "?", 0) + 1
    for role in ROLES:
        for rid, v in store.verdicts(role).items():
            if v.status == "infra_error" and rid in rollouts and rollouts[rid].status != "infra_error":
                kind = v.error_kind or "VerifyInfra"
                out.verdicts[kind] = out.verdicts.get(kind, 0) + 1
    for task_id, unprepared in store.prepare_failures().items():
        if task_id in ids:
            out.tasks[unprepared.error] = out.tasks.get(unprepared.error, 0) + 1
    for (task_id, _), unselected in store.selector_failures().items():
        if task_id in ids:
            kind = unselected.error_kind
            out.selections[kind] = out.selections.get(kind, 0) + 1
    return out


def run_batch(
    tasks: list[Task], config: RunConfig, *, suite: str = "suite", factories: Factories | None = None,
    emit: Display | None = None, before_drive: Callable[[RunStore], None] | None = None,
) -> RunResult:
    """Run (or resume) N rollouts of every task, verify and select; record everything in the run store.

    ``before_drive(store)`` runs under the run's lock once the store is created, before the planner reads it
    (``agentbon eval`` writes its predictions there as finished rollouts); what it raises stops the run.
    """
    factories = factories or Factories()
    run_id = resolve_run_id(suite, config, tasks)
    config = config.model_copy(update={"run_id": run_id})
    from agentbon.inert import judges
    from agentbon.models import resolve_model

    # The model service decides which server it starts (and why: printed, then recorded once the store exists).
    choose = getattr(factories.server(config.model), "choose", None)
    show: Display = emit or (lambda event: None)
    choice = choose(log=lambda msg: show(Note(message=msg))) if choose else None
    model = config.model.model_copy(update={"launcher": choice.launcher}) if choice else config.model
    model = resolve_model(model)
    if judges(config) and model.launcher == "llama-cpp" and not model.urls():
        # The judge's p(YES) is read from logprobs, which the llama.cpp server this run starts serves only when asked.
        model = model.model_copy(update={"logprobs": True})
    config = config.model_copy(update={"model": model})  # the store names what ran
    # Everything that can fail before the first rollout fails now, before the run directory exists.
    warnings = require_preflight(config, tasks, factories)
    store = RunStore(Path(config.run_dir) / run_id)
    SelectionStage(config, factories.selector, store).preflight()
    record = Recorder(store, emit)
    result = RunResult(run_id=run_id, path=store.path)
    t0 = time.time()
    with store.lock():
        check_resumable(store, config)
        fresh = not store.config_data()  # no earlier driver of this run: none of its sandboxes can exist yet
        changes = check_task_changes(store, tasks, config)
        store.create(config.model_dump(mode="json"), tasks, replace=set(changes.redefined))
        if before_drive is not None:
            before_drive(store)
        if choice is not None:
            record(LauncherChosen(**choice.model_dump()))
        for problem in warnings:
            record(Warning(message=f"preflight: {problem}"))
        if changes.redefined:
            redefined = ", ".join(sorted(changes.redefined))
            record(Warning(message=f"resumed with {len(changes.redefined)} redefined task(s): {redefined}"))
        if changes.dropped:
            record(Warning(message=(
                f"resumed without {len(changes.dropped)} task(s) of this run, left out of its report (their records "
                f"stay; a resume with them brings them back): {', '.join(sorted(changes.dropped))}"
            )))  # fmt: skip
        service = factories.server(config.model)
        # A server this run owns starts loading now where it can, so that Ray's start overlaps it
        # (docs/sandboxes.md, "Start-up"); Ray's renice leaves its processes alone.
        service.launch(ray_address=config.ray_address)
        try:
            cluster = connect(config, spare=service.pids())
        except BaseException:
            service.stop()
            raise
        try:
            try:
                # Sandboxes of an earlier driver of this run that died without cleaning up (kill -9). A new run has
                # none, and skipping the reap takes a round of Ray tasks off the time to its first rollout.
                if not fresh:
                    reap_everywhere(config, factories, {"run": run_id})
                config = config.model_copy(update={"model": service.start()})
                warning = endpoint_warning(config)
                if warning:
                    record(Warning(message=warning))
                try:
                    _drive(tasks, config, record, factories, cluster, result, service)
                except Exception:  # a bug or an unexpected fault: the run's sandboxes go before Ray does
                    _reap_quietly(config, factories, run_id)
                    raise
                # Whatever a failure left behind (a container the engine could not remove while it restarted).
                reap_everywhere(config, factories, {"run": run_id})
                if cluster.started:
                    _check_nothing_left(config, factories, run_id, record)
            finally:
                _record_model_stats(service, record)
                service.stop()
        finally:
            cluster.shutdown()
        result.wall_s = time.time() - t0
        result.infra_left = infra_left(store, tasks)
        record(End(interrupted=result.interrupted, wall_s=round(result.wall_s, 2), aborted=result.aborted))
    if not result.interrupted:
        try:
            result.report = factories.report(store)
        except Exception as e:  # the run is recorded; the report can be redone with `agentbon report`
            result.report_error = f"{type(e).__name__}: {e}"
    return result


def _check_nothing_left(config: RunConfig, factories: Factories, run_id: str, record: Recorder) -> None:
    """On a local Ray (this machine is the only node) the driver checks the reapers' work itself: a sandbox of the
    run still here is removed now and named in a warning, so that the run's record says it happened."""
    try:
        left = factories.backend(config.sandbox).reap({"run": run_id})
    except Exception as e:  # the engine went away at the very end: `agentbon cleanup` removes what is left
        log.warning("could not check for the run's leftover sandboxes (%s): run `agentbon cleanup`", e)
        return
    if left:
        message = (
            f"{left} sandbox(es) of this run were still on this machine after the end-of-run reap; removed now "
            "(docs/sandboxes.md, 'Warm sandboxes')"
        )
        log.warning(message)
        record(Warning(message=message))


def _reap_quietly(config: RunConfig, factories: Factories, run_id: str) -> None:
    """Remove the run's sandboxes on every node while an exception is on its way out (never raises over it)."""
    try:
        reap_everywhere(config, factories, {"run": run_id})
    except Exception as e:  # the original exception matters more; `agentbon cleanup` removes what is left
        log.warning("could not remove the run's sandboxes (%s): run `agentbon cleanup`", e)


def _record_model_stats(service: Any, record: Recorder) -> None:
    """Record the serving side's figures (start time, prefix-cache hit rate) as a ``model_stats`` event."""
    try:
        stats = service.stats() if hasattr(service, "stats") else {}
    except Exception as e:  # figures only: never fail a recorded run over them
        stats = {"error": f"{type(e).__name__}: {e}"}
    if stats:
        record(ModelStats(**stats))


def _drive(
    tasks: list[Task], config: RunConfig, record: Recorder, factories: Factories, cluster: Any,
    result: RunResult, service: Any,
) -> None:
    store = record.store
    plan = plan_run(tasks, config, store, store.run_id)
    result.planned, result.already_done = len(plan.specs), len(plan.finished)
    record(Start(n=config.n, tasks=len(tasks), planned=result.planned, finished=len(plan.finished)))
    for task_id, skipped in plan.skipped.items():
        add(result.saved, EarlyStop(task_id=task_id, skipped=skipped))
    record(
        PlanMade(
            tasks=len(tasks), n=config.n, planned=result.planned, finished=len(plan.finished),
            verify=len(plan.verify), skipped=sum(len(s) for s in plan.skipped.values()),
        )
    )
    driver = Driver(
        tasks, config, record, factories, cluster, restart_server=service.restart,
        server_tokens=getattr(service, "generated", None),
    )  # fmt: skip
    driver.load(plan)
    driver.run()
    settle(driver.state.background)
    result.interrupted, result.aborted = driver.interrupted, driver.aborted
    for name in ("tasks", "skipped", "cancelled"):
        getattr(result.saved, name).extend(getattr(driver.saved, name))
    result.saved.sandbox_s += driver.saved.sandbox_s
