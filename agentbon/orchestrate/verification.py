"""The verification stage of the driver: dedupe identical patches, submit within ``verify.concurrency``,
record verdicts, retry infra failures within the bound, and fire early stop on a migration task's first pass.
"""

from __future__ import annotations

from typing import Any

import ray

from agentbon.orchestrate.early_stop import add, should_stop, stop_task
from agentbon.orchestrate.faults import Failure
from agentbon.orchestrate.state import Unit
from agentbon.types import Role, Rollout, Verdict, patch_hash


class Verification:
    """Verification handling of the driver (mixed into ``Driver``; it owns the state this reads)."""

    def _on_verify(self: Any, unit: Unit, verdicts: list[Verdict] | None, failure: Failure | None) -> None:
        rollout = unit.rollout
        assert rollout is not None
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


def _infra_verdict(rollout: Rollout, role: Role, reason: str) -> Verdict:
    return Verdict(
        run_id=rollout.run_id, task_id=rollout.task_id, rollout_id=rollout.rollout_id, role=role,
        status="infra_error", reason=reason,
    )
