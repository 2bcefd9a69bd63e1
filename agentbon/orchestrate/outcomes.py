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
from agentbon.orchestrate.early_stop import add, should_stop, stop_task
from agentbon.orchestrate.faults import Failure, classify, deadline_failure
from agentbon.orchestrate.plan import ROLES
from agentbon.orchestrate.state import Unit
from agentbon.orchestrate.workers import RolloutOutcome
from agentbon.types import Role, Rollout, Timings, Verdict, patch_hash

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

    def _on_verify(self: Any, unit: Unit, verdicts: list[Verdict] | None, failure: Failure | None) -> None:
        rollout = unit.rollout
        book = self.books[unit.task_id]
        book.verifying -= 1
        if verdicts is None:
            assert failure is not None
            reason = f"{failure.kind}: {failure.message}"
            verdicts = [_infra_verdict(rollout, role, reason) for role in unit.roles]
        self.record_verdicts(rollout, [v for v in verdicts if v.status != "infra_error"])
        broken = [v for v in verdicts if v.status == "infra_error"]
        if broken:
            kind, _, message = broken[0].reason.partition(": ")
            self.record_infra(unit, Failure(kind, message, True))
            # Past the deadline there is no time left to retry in.
            if kind != "RolloutDeadline" and self.retry.allows(unit.attempt):
                self.enqueue_verify(rollout, [v.role for v in broken], unit.attempt + 1)
            else:
                self.record_verdicts(rollout, broken)
        for waiter, roles in self.cache.waiting.pop((rollout.task_id, patch_hash(rollout.patch)), []):
            self.books[waiter.task_id].verifying -= 1
            self.enqueue_verify(waiter, roles, 1)  # now shares the verdict (or runs itself if this one failed)

    # ------------------------------------------------------------ verification
    def enqueue_verify(self: Any, rollout: Rollout, roles: list[Role], attempt: int) -> None:
        self.books[rollout.task_id].verifying += 1
        self.verify_queue.append((rollout, roles, attempt))

    def submit_verify(self: Any, rollout: Rollout, roles: list[Role], attempt: int) -> int:
        """Share an identical patch's verdicts, wait for one being verified, or submit; return units submitted."""
        book = self.books[rollout.task_id]
        shared = self.cache.lookup(rollout, roles)
        if shared is not None:
            book.verifying -= 1
            self.record_verdicts(rollout, shared)
            return 0
        key = (rollout.task_id, patch_hash(rollout.patch))
        if self.cache.enabled and key in self.cache.waiting:
            self.cache.waiting[key].append((rollout, roles))
            return 0
        budget = self.config.deadline_s - rollout.timings.wall_s
        if budget <= 0:
            book.verifying -= 1
            reason = "RolloutDeadline: no time left to verify within the rollout's deadline"
            self.record_verdicts(rollout, [_infra_verdict(rollout, role, reason) for role in roles])
            return 0
        if self.cache.enabled:
            self.cache.waiting[key] = []
        self.launch_verify(rollout, roles, attempt, budget)
        return 1

    def record_verdicts(self: Any, rollout: Rollout, verdicts: list[Verdict]) -> None:
        """Save verdicts, remember them for dedupe, and fire early stop on a migration task's first pass."""
        book = self.books[rollout.task_id]
        for verdict in verdicts:
            self.store.save_verdict(verdict)
            self.verdicts[verdict.role][verdict.rollout_id] = verdict
            self.cache.learn(rollout, verdict)
            book.changed = True
            self.emit("verdict", verdict=verdict)
            if should_stop(book, verdict, self.config):
                event = stop_task(book, self.inflight, self.sandbox_s)
                self.store.append("early_stop", **event)
                add(self.saved, event)
                for ref, unit in self.inflight.items():
                    if unit.task_id == book.task.task_id and unit.cancel == "early_stop" and not unit.forced:
                        ray.cancel(ref)  # a KeyboardInterrupt in the worker: it closes its sandbox itself
                self.emit("early_stop", **event)

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


def _infra_verdict(rollout: Rollout, role: Role, reason: str) -> Verdict:
    return Verdict(
        run_id=rollout.run_id, task_id=rollout.task_id, rollout_id=rollout.rollout_id, role=role,
        status="infra_error", reason=reason,
    )
