"""A whole batch: open the run store, join Ray, make sure of a model endpoint, plan, drive, report."""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentbon.config import RunConfig
from agentbon.errors import ConfigError
from agentbon.orchestrate.cluster import connect, reap_everywhere, settle
from agentbon.orchestrate.driver import Driver, Emit
from agentbon.orchestrate.early_stop import Saved, add
from agentbon.orchestrate.factories import Factories
from agentbon.orchestrate.plan import plan_run
from agentbon.store import RunStore
from agentbon.types import Task

# Settings that change what a rollout produces: a resumed run must keep them (everything else may change).
SEMANTIC = (
    "model.name", "model.temperature", "model.top_p", "model.top_k", "model.max_tokens", "model.seed", "agent",
)  # fmt: skip


def _pick(config: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        config = config.get(part, {}) if isinstance(config, dict) else {}
    return config


def default_run_id(suite: str, config: RunConfig) -> str:
    """``<suite>-<model>-<hash of the semantic settings>``: the same command finds the same run again."""
    data = config.model_dump(mode="json")
    digest = hashlib.sha256(json.dumps([_pick(data, k) for k in SEMANTIC], sort_keys=True).encode()).hexdigest()
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{Path(suite).stem}-{config.model.name}").strip("-")
    return f"{name}-{digest[:8]}"


def check_resumable(store: RunStore, config: RunConfig) -> None:
    """Refuse to resume a run with settings that would make its rollouts incomparable."""
    before = store.config()
    if not before:
        return
    now = config.model_dump(mode="json")
    changed = [k for k in SEMANTIC if _pick(before, k) != _pick(now, k)]
    if changed:
        diffs = ", ".join(f"{k}: {_pick(before, k)!r} -> {_pick(now, k)!r}" for k in changed)
        # Scalar settings can be put back on the command line (a changed agent section cannot, in one flag).
        scalars = {k: _pick(before, k) for k in changed if not isinstance(_pick(before, k), dict | list)}
        back = " ".join(f"-c {k}={'null' if v is None else v}" for k, v in scalars.items())
        hint = f"to resume it, pass {back}; " if len(scalars) == len(changed) else ""
        raise ConfigError(
            f"{store.path}: cannot resume with different settings ({diffs}); {hint}or use another --run-id"
        )


def endpoint_warning(config: RunConfig) -> str | None:
    """A warning when rollouts on other machines could not reach a loopback model endpoint."""
    from urllib.parse import urlparse

    from agentbon.orchestrate.cluster import alive_nodes

    host = urlparse(config.model.endpoint or "").hostname or ""
    if host in ("127.0.0.1", "localhost", "::1") and len(alive_nodes()) > 1:
        return (
            f"model endpoint {config.model.endpoint} is on this machine's loopback, but the cluster has "
            f"{len(alive_nodes())} nodes: rollouts elsewhere cannot reach it (give --endpoint a reachable address)"
        )
    return None


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
    wall_s: float = 0.0
    report: dict | None = None
    """The run's summary (``summary.json``), when the report was written."""
    report_error: str | None = None


def run_batch(
    tasks: list[Task], config: RunConfig, *, suite: str = "suite", factories: Factories | None = None,
    emit: Emit | None = None,
) -> RunResult:
    """Run (or resume) N rollouts of every task, verify and select; record everything in the run store."""
    factories = factories or Factories()
    emit = emit or (lambda *a, **k: None)
    run_id = config.run_id or default_run_id(suite, config)
    config = config.model_copy(update={"run_id": run_id})
    from agentbon.models import resolve_model

    config = config.model_copy(update={"model": resolve_model(config.model)})  # the store names what ran
    store = RunStore(Path(config.run_dir) / run_id)
    result = RunResult(run_id=run_id, path=store.path)
    t0 = time.time()
    with store.lock():
        check_resumable(store, config)
        store.create(config.model_dump(mode="json"), tasks)
        cluster = connect(config)
        try:
            # Sandboxes of an earlier driver of this run that died without cleaning up (kill -9).
            reap_everywhere(config, factories, {"run": run_id})
            service = factories.server(config.model)
            try:
                config = config.model_copy(update={"model": service.start()})
                warning = endpoint_warning(config)
                if warning:
                    store.append("warning", message=warning)
                    emit("warning", message=warning)
                _drive(tasks, config, store, factories, cluster, emit, result, service)
            finally:
                _record_model_stats(service, store)
                service.stop()
        finally:
            cluster.shutdown()
        result.wall_s = time.time() - t0
        store.append("end", interrupted=result.interrupted, wall_s=round(result.wall_s, 2))
    if not result.interrupted:
        try:
            result.report = factories.report(store)
        except Exception as e:  # the run is recorded; the report can be redone with `agentbon report`
            result.report_error = f"{type(e).__name__}: {e}"
    return result


def _record_model_stats(service: Any, store: RunStore) -> None:
    """Record the serving side's figures (start time, prefix-cache hit rate) as a ``model_stats`` event."""
    try:
        stats = service.stats() if hasattr(service, "stats") else {}
    except Exception as e:  # figures only: never fail a recorded run over them
        stats = {"error": f"{type(e).__name__}: {e}"}
    if stats:
        store.append("model_stats", **stats)


def _drive(
    tasks: list[Task], config: RunConfig, store: RunStore, factories: Factories, cluster: Any, emit: Emit,
    result: RunResult, service: Any,
) -> None:
    plan = plan_run(tasks, config, store, store.run_id)
    result.planned, result.already_done = len(plan.specs), len(plan.finished)
    store.append("start", n=config.n, tasks=len(tasks), planned=result.planned, finished=len(plan.finished))
    for task_id, skipped in plan.skipped.items():
        add(result.saved, {"task_id": task_id, "skipped": skipped, "cancelled": [], "est_sandbox_s_saved": 0.0})
    emit(
        "plan", tasks=len(tasks), n=config.n, planned=result.planned, finished=len(plan.finished),
        verify=len(plan.verify), skipped=sum(len(s) for s in plan.skipped.values()),
    )
    driver = Driver(tasks, config, store, factories, cluster, emit, restart_server=service.restart)
    driver.selection.preflight()
    driver.load(plan)
    driver.run()
    settle(driver.background)
    result.interrupted = driver.interrupted
    for name in ("tasks", "skipped", "cancelled"):
        getattr(result.saved, name).extend(getattr(driver.saved, name))
    result.saved.sandbox_s += driver.saved.sandbox_s
