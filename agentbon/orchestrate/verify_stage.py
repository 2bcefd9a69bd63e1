"""The verification stage: dedupe identical patches, submit within ``verify.concurrency``, record verdicts,
retry infra failures within the bound, and fire early stop on a migration task's first pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import ray

from agentbon.orchestrate.cluster import reap_async
from agentbon.orchestrate.early_stop import Saved, add, should_stop, stop_task
from agentbon.orchestrate.faults import Failure
from agentbon.orchestrate.plan import ROLES
from agentbon.orchestrate.rollout_stage import record_infra
from agentbon.orchestrate.state import RunState, Unit
from agentbon.types import Role, Rollout, Verdict, patch_hash
from agentbon.verify.budget import budget_s

Launch = Callable[[Rollout, list[Role], int, float], None]
"""Submits one verification unit: (rollout, roles, attempt, seconds each role's verification may take)."""


class VerifyStage:
    """Queues candidates for verification, shares verdicts of identical patches, records what comes back."""

    def __init__(self, state: RunState, launch: Launch, saved: Saved):
        self.state, self.launch, self.saved = state, launch, saved

    def enqueue(self, rollout: Rollout, roles: list[Role] | None = None, attempt: int = 1) -> None:
        """Queue a candidate for verification in ``roles`` (all of them by default)."""
        self.state.books[rollout.task_id].verifying += 1
        self.state.verify_queue.append((rollout, list(roles or ROLES), attempt))

    def submit_ready(self) -> None:
        """Submit queued verifications while ``verify.concurrency`` allows."""
        state = self.state
        verifying = state.count("verify")
        while state.verify_queue and verifying < max(state.config.verify.concurrency, 1):
            verifying += self._submit(*state.verify_queue.popleft())

    def on_verify(self, unit: Unit, verdicts: list[Verdict] | None, failure: Failure | None) -> None:
        """Record a verification's verdicts; retry the roles that failed on infrastructure."""
        state = self.state
        rollout = unit.rollout
        assert rollout is not None
        state.books[unit.task_id].verifying -= 1
        if verdicts is None:
            assert failure is not None
            labels = {"run": state.run_id, "rollout": rollout.rollout_id, "attempt": f"verify-{unit.attempt}"}
            state.background += reap_async(state.config, state.factories, labels, [unit.node_id] if unit.node_id else None)
            verdicts = [_infra_verdict(rollout, role, failure) for role in unit.roles]
        self.record(rollout, [v for v in verdicts if v.status != "infra_error"])
        broken = [v for v in verdicts if v.status == "infra_error"]
        if broken:
            kind = broken[0].error_kind or "VerifyInfra"
            message = broken[0].reason.removeprefix(f"{kind}: ")
            retry = state.retry.allows(unit.attempt)  # its budget is its own: a retry has all of it again
            record_infra(state, unit, Failure(kind, message, True), retry)
            if retry:
                state.books[rollout.task_id].verifying += 1
                at = time.time() + state.retry.delay(unit.attempt)
                state.verify_delayed.append((at, rollout, [v.role for v in broken], unit.attempt + 1))
            else:
                state.infra_streak += 1
                self.record(rollout, broken)
        elif verdicts:
            state.infra_streak = 0
        for waiter, roles in state.cache.waiting.pop((rollout.task_id, patch_hash(rollout.patch)), []):
            state.books[waiter.task_id].verifying -= 1
            self.enqueue(waiter, roles, 1)  # now shares the verdict (or runs itself if this one failed)

    def _submit(self, rollout: Rollout, roles: list[Role], attempt: int) -> int:
        """Share an identical patch's verdicts, wait for one being verified, or submit; return units submitted."""
        state = self.state
        book = state.books[rollout.task_id]
        shared = state.cache.lookup(rollout, roles)
        if shared is not None:
            book.verifying -= 1
            self.record(rollout, shared)
            return 0
        key = (rollout.task_id, patch_hash(rollout.patch))
        if state.cache.enabled and key in state.cache.waiting:
            state.cache.waiting[key].append((rollout, roles))
            return 0
        if state.cache.enabled:
            state.cache.waiting[key] = []
        # Its own budget, not what the rollout left of its deadline: a slow rollout is verified all the same.
        self.launch(rollout, roles, attempt, budget_s(state.config.verify, state.config.sandbox.setup_timeout_s))
        return 1

    def record(self, rollout: Rollout, verdicts: list[Verdict]) -> None:
        """Save verdicts, remember them for dedupe, and fire early stop on a migration task's first pass."""
        state = self.state
        book = state.books[rollout.task_id]
        for verdict in verdicts:
            state.record.verdict(verdict)
            state.verdicts[verdict.role][verdict.rollout_id] = verdict
            state.cache.learn(rollout, verdict)
            book.changed = True
            book.revision += 1
            if should_stop(book, verdict, state.config):
                event = stop_task(book, state.inflight, state.sandbox_s)
                state.record(event)
                add(self.saved, event)
                for ref, unit in state.inflight.items():
                    if unit.task_id == book.task.task_id and unit.cancel == "early_stop" and not unit.forced:
                        ray.cancel(ref)  # a KeyboardInterrupt in the worker: it closes its sandbox itself


def _infra_verdict(rollout: Rollout, role: Role, failure: Failure) -> Verdict:
    return Verdict(
        run_id=rollout.run_id, task_id=rollout.task_id, rollout_id=rollout.rollout_id, role=role,
        status="infra_error", reason=f"{failure.kind}: {failure.message}", error_kind=failure.kind,
    )
