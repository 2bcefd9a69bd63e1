"""The rollout stage: what the driver does with each finished prepare or rollout unit.

Every result is saved by the driver (the store is on the driver's disk). Infra failures are recorded as
``infra`` events with the attempt, node and traceback, then retried while the budget allows; only the
last attempt is kept as the rollout's record. Model failures are recorded once and never retried. Which is
which is decided by ``faults.classify`` alone, from the exception and where it was raised (docs/failure-taxonomy.md).
A task whose environment cannot be prepared is recorded once, as the task's, never as a failure of each rollout.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from agentbon.errors import AgentbonError
from agentbon.orchestrate.cluster import reap_async
from agentbon.orchestrate.events import Cancelled, Infra, PrepareFailed, ServerRestart
from agentbon.orchestrate.faults import Failure
from agentbon.orchestrate.state import RunState, Unit
from agentbon.orchestrate.workers import RolloutOutcome
from agentbon.types import Rollout, Timings

RESTART_EVERY_S = 30.0
"""At most one model-server restart in this window (a burst of ServerFailures restarts it once)."""


def record_infra(state: RunState, unit: Unit, failure: Failure, retry: bool) -> None:
    """Record an ``infra`` event (and the traceback under the rollout's ``logs/``)."""
    rid = unit.rollout_id or None
    if rid and failure.traceback:
        state.store.save_log(rid, f"{unit.kind}-attempt{unit.attempt}.txt", failure.traceback)
    state.record(
        Infra(
            unit=unit.kind, task_id=unit.task_id, rollout_id=rid, attempt=unit.attempt, error=failure.kind,
            message=failure.message, node_id=unit.node_id, retry=retry,
        )
    )


class RolloutStage:
    """Takes prepare and rollout results: records them, retries infra failures, hands candidates to verification."""

    def __init__(
        self, state: RunState, enqueue_verify: Callable[[Rollout], None],
        restart_server: Callable[[], None] | None = None,
    ):
        self.state = state
        self.enqueue_verify = enqueue_verify
        self.restart_server = restart_server
        self._last_restart = 0.0

    def on_prepare(self, unit: Unit, value: Any, failure: Failure | None) -> None:
        """A task's environment is ready, or failed to build: retried within the bound, then recorded once, as the
        task's (a ``prepare_failed`` event): its rollouts are not run here, and run on resume."""
        book = self.state.books[unit.task_id]
        book.preparing = False
        if failure is None:
            book.prepared = True
            return
        unit.attempt = book.prepare_attempts = book.prepare_attempts + 1
        retry = failure.infra and self.state.retry.allows(unit.attempt)
        record_infra(self.state, unit, failure, retry)
        if retry:
            book.prepare_not_before = time.time() + self.state.retry.delay(unit.attempt)
            return  # submitted again once the back-off has passed
        self.state.infra_streak += 1
        book.unprepared = True
        self.state.record(
            PrepareFailed(
                task_id=unit.task_id, error=failure.kind, message=failure.message, attempts=unit.attempt,
                rollouts=len(book.queued),
            )
        )
        book.queued.clear()  # never recorded as the model's failures: the planner plans them again on resume

    def on_rollout(self, unit: Unit, outcome: RolloutOutcome | None, failure: Failure | None) -> None:
        """A rollout finished (or its worker died): record it, or retry it when infrastructure failed."""
        state = self.state
        book = state.books[unit.task_id]
        book.running -= 1
        spec = unit.spec
        assert spec is not None
        if unit.cancel == "early_stop":
            # Cancelled by early stop: never recorded, even when its result arrived before the cancel took effect
            # (the early_stop event already lists it as not run).
            state.record(Cancelled(rollout_id=spec.rollout_id))
            if outcome is None:
                self._reap(unit)
            return
        if outcome is None:
            assert failure is not None
            start = unit.started_at or unit.submitted_at
            rollout = Rollout(
                run_id=spec.run_id, task_id=spec.task_id, index=spec.index, seed=spec.seed, attempt=spec.attempt,
                status="infra_error" if failure.infra else failure.recorded_as,  # type: ignore[arg-type]
                exit_status=failure.kind, error=failure.message, traceback=failure.traceback,
                timings=Timings(started_at=start, wall_s=time.time() - start),
            )
            outcome = RolloutOutcome(rollout=rollout, node_id=unit.node_id or "", server_failure=failure.server)
            self._reap(unit)  # the worker died: its sandbox may still be running
        rollout = outcome.rollout
        if rollout.status == "infra_error":
            unit.node_id = unit.node_id or outcome.node_id
            if failure is None:
                self._reap(unit)  # its sandbox's removal may have failed with the engine (restarting, gone)
            not_needed = book.stopped and spec.index >= book.fixed  # the task passed meanwhile
            retry = not not_needed and state.retry.allows(spec.attempt)
            seen = failure or Failure(rollout.exit_status, rollout.error or "", True, traceback=rollout.traceback or "")
            record_infra(state, unit, seen, retry)
            if outcome.server_failure:
                self._restart_server()
            if not_needed:
                return
            if retry:
                again = spec.model_copy(update={"attempt": spec.attempt + 1})
                book.delayed.append((time.time() + state.retry.delay(spec.attempt), again))
                return
            state.infra_streak += 1
        else:
            state.infra_streak = 0
        self.save(rollout, outcome.messages)

    def save(self, rollout: Rollout, messages: list[dict[str, Any]]) -> None:
        """Record a rollout as final and queue its verification (infra errors are not verified)."""
        book = self.state.books[rollout.task_id]
        self.state.record.rollout(rollout, messages)
        book.finished[rollout.rollout_id] = rollout
        book.changed = True
        book.revision += 1
        if rollout.status != "infra_error":
            self.state.sandbox_s.append(rollout.timings.sandbox_s)
            self.enqueue_verify(rollout)

    def _reap(self, unit: Unit) -> None:
        """Remove a dead unit's sandbox on its node (on every node when the tracker had not said where yet)."""
        if unit.spec is not None:
            state = self.state
            labels = {"run": state.run_id, "rollout": unit.spec.rollout_id, "attempt": str(unit.spec.attempt)}
            nodes = [unit.node_id] if unit.node_id else None
            state.background += reap_async(state.config, state.factories, labels, nodes)

    def _restart_server(self) -> None:
        now = time.time()
        if self.restart_server is None or now - self._last_restart < RESTART_EVERY_S:
            return
        self._last_restart = now
        try:
            self.restart_server()
        except AgentbonError as e:  # a server that does not come back is an infra fault of the run, not a crash
            self.state.record(ServerRestart(error=f"{type(e).__name__}: {str(e)[:2000]}"))
            return
        self.state.record(ServerRestart())
