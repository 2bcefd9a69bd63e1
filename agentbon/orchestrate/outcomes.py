"""What the driver does with each finished unit: record it, retry infra failures within the bound, move on.

Every result is saved by the driver (the store is on the driver's disk). Infra failures are recorded as
``infra`` events with the attempt, node and traceback, then retried while the budget allows; only the
last attempt is kept as the rollout's record. Model failures are recorded once and never retried.
"""

from __future__ import annotations

import time
from typing import Any

import ray

from agentbon.orchestrate.cluster import reap_async
from agentbon.orchestrate.faults import Failure, classify, deadline_failure
from agentbon.orchestrate.plan import ROLES
from agentbon.orchestrate.state import Unit
from agentbon.orchestrate.workers import RolloutOutcome
from agentbon.types import Rollout, Timings

RESTART_EVERY_S = 30.0
"""At most one model-server restart in this window (a burst of ServerFailures restarts it once)."""


class Outcomes:
    """Result handling of the driver (mixed into ``Driver``; it owns the state this reads)."""

    books: dict[str, Any]
    _last_restart = 0.0

    def handle(self: Any, ref: Any, unit: Unit) -> None:
        """Take one finished unit's result (or its failure) and route it to its stage."""
        try:
            value, failure = ray.get(ref), None
        except Exception as e:  # Ray failures surface here: worker or node died, cancelled
            value, failure = None, classify(e)
            if unit.cancel == "deadline":
                failure = deadline_failure(unit.budget_s)
        if unit.cancel == "interrupt":
            return
        getattr(self, f"_on_{unit.kind}")(unit, value, failure)

    def record_infra(self: Any, unit: Unit, failure: Failure) -> None:
        """Append an ``infra`` event (and the traceback under the rollout's ``logs/``)."""
        rid = unit.rollout_id or None
        self.store.append(
            "infra", unit=unit.kind, task_id=unit.task_id, rollout_id=rid, attempt=unit.attempt,
            error=failure.kind, message=failure.message, node_id=unit.node_id,
        )
        if rid and failure.traceback:
            self.store.save_log(rid, f"{unit.kind}-attempt{unit.attempt}.txt", failure.traceback)
        self.emit("infra", unit=unit.kind, rollout_id=rid, error=failure.kind, message=failure.message)

    # ----------------------------------------------------------------- stages
    def _on_prepare(self: Any, unit: Unit, value: Any, failure: Failure | None) -> None:
        book = self.books[unit.task_id]
        book.preparing = False
        if failure is None:
            book.prepared = True
            return
        unit.attempt = book.prepare_attempts = book.prepare_attempts + 1
        self.record_infra(unit, failure)
        if failure.infra and self.retry.allows(unit.attempt):
            return  # submitted again on the next pass
        for spec in list(book.queued):  # every rollout of the task is recorded as failed: never dropped silently
            rollout = Rollout(
                run_id=spec.run_id, task_id=spec.task_id, index=spec.index, seed=spec.seed, attempt=unit.attempt,
                status="infra_error", exit_status=failure.kind, error=f"prepare: {failure.message}",
            )
            self._save_rollout(rollout, [])
        book.queued.clear()

    def _on_rollout(self: Any, unit: Unit, outcome: RolloutOutcome | None, failure: Failure | None) -> None:
        book = self.books[unit.task_id]
        book.running -= 1
        spec = unit.spec
        assert spec is not None
        if outcome is None:
            assert failure is not None
            if unit.cancel == "early_stop":
                self.emit("cancelled", rollout_id=spec.rollout_id)
                self._reap(unit)
                return
            start = unit.started_at or unit.submitted_at
            rollout = Rollout(
                run_id=spec.run_id, task_id=spec.task_id, index=spec.index, seed=spec.seed, attempt=spec.attempt,
                status="infra_error", exit_status=failure.kind, error=failure.message, traceback=failure.traceback,
                timings=Timings(started_at=start, wall_s=time.time() - start),
            )
            outcome = RolloutOutcome(rollout=rollout, node_id=unit.node_id or "")
            self._reap(unit)  # the worker died: its sandbox may still be running
        rollout = outcome.rollout
        if rollout.status == "infra_error":
            unit.node_id = unit.node_id or outcome.node_id
            self.record_infra(unit, failure or Failure(rollout.exit_status, rollout.error or "", True, traceback=rollout.traceback or ""))
            if outcome.server_failure:
                self._restart_server()
            if book.stopped:
                return  # the task passed meanwhile: this rollout is not needed any more
            if self.retry.allows(spec.attempt):
                book.queued.appendleft(spec.model_copy(update={"attempt": spec.attempt + 1}))
                return
        self._save_rollout(rollout, outcome.messages)

    def _save_rollout(self: Any, rollout: Rollout, messages: list[dict[str, Any]]) -> None:
        book = self.books[rollout.task_id]
        self.store.save_rollout(rollout, messages)
        book.finished[rollout.rollout_id] = rollout
        book.changed = True
        if rollout.status != "infra_error":
            self.sandbox_s.append(rollout.timings.sandbox_s)
            self.enqueue_verify(rollout, list(ROLES), 1)
        self.emit("rollout", rollout=rollout)

    # ------------------------------------------------------------------ misc
    def _reap(self: Any, unit: Unit) -> None:
        """Remove a dead unit's sandbox on its node (on every node when the tracker had not said where yet)."""
        if unit.spec is not None:
            labels = {"run": self.run_id, "rollout": unit.spec.rollout_id, "attempt": str(unit.spec.attempt)}
            nodes = [unit.node_id] if unit.node_id else None
            self.background += reap_async(self.config, self.factories, labels, nodes)

    def _restart_server(self: Any) -> None:
        now = time.time()
        if self.restart_server is None or now - self._last_restart < RESTART_EVERY_S:
            return
        self._last_restart = now
        self.store.append("server_restart")
        self.emit("server_restart")
        self.restart_server()
