"""The driver loop: submit units within bounds, consume results in completion order, enforce deadlines.

Work flows through three stages (prepare a task's environment → rollouts → verification), each unit a
Ray task. Rollouts hold a sandbox slot (custom resource); at most ``max_pending`` are submitted and
unfinished; verification has its own slots and ``verify.concurrency``. Results are taken with
``ray.wait`` as they complete; the tracker tells when a unit really started, which is where its hard
deadline counts from. Ctrl-C cancels everything, reaps the run's sandboxes on every node and returns
with the store consistent (everything recorded is complete; the rest runs again on resume).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import ray

from agentbon.config import RunConfig
from agentbon.orchestrate import workers
from agentbon.orchestrate.cluster import Cluster
from agentbon.orchestrate.early_stop import Saved
from agentbon.orchestrate.factories import Factories
from agentbon.orchestrate.faults import RetryBudget
from agentbon.orchestrate.outcomes import Outcomes
from agentbon.orchestrate.plan import ROLES, Plan, roles_missing
from agentbon.orchestrate.selection import SelectionStage
from agentbon.orchestrate.state import TaskBook, Unit, VerdictCache
from agentbon.orchestrate.supervise import Supervision
from agentbon.orchestrate.tracker import start_tracker
from agentbon.orchestrate.verification import Verification
from agentbon.store import RunStore
from agentbon.types import Role, Rollout, Task

TICK_S = 0.5
"""Longest wait for a result before the driver polls the tracker and checks deadlines."""
PREPARE_AHEAD = 2
"""Task environments prepared at once ahead of their rollouts."""

Emit = Callable[..., None]


class Driver(Outcomes, Verification, Supervision):
    """Runs a plan to completion (or until interrupted) and records everything in the store."""

    def __init__(
        self, tasks: list[Task], config: RunConfig, store: RunStore, factories: Factories, cluster: Cluster,
        emit: Emit, restart_server: Callable[[], None] | None = None,
    ):
        self.config, self.store, self.factories, self.cluster, self.emit = config, store, factories, cluster, emit
        self.run_id = store.run_id
        self.restart_server = restart_server
        self.books = {t.task_id: TaskBook(t) for t in tasks}
        self.inflight: dict[Any, Unit] = {}
        self.verify_queue: deque[tuple[Rollout, list[Role], int]] = deque()
        self.cache = VerdictCache(enabled=config.verify.dedupe)
        self.verdicts = {role: store.verdicts(role) for role in ROLES}
        self.sandbox_s: list[float] = []
        self.retry = RetryBudget(config.infra_retries)
        self.saved = Saved()
        self.selection = SelectionStage(config, factories.selector, store)
        self.interrupted = False
        self.background: list[Any] = []
        """Fire-and-forget units (reapers) awaited at the end."""
        self.tracker = start_tracker()
        self._config_ref, self._factories_ref = ray.put(config), ray.put(factories)
        self._task_refs = {t.task_id: ray.put(t) for t in tasks}
        self._remote_rollout = ray.remote(workers.run_rollout).options(**cluster.rollout_options())
        self._remote_verify = ray.remote(workers.run_verify).options(**cluster.verify_options())
        self._remote_prepare = ray.remote(workers.run_prepare).options(**cluster.rollout_options())

    # ------------------------------------------------------------------ setup
    def load(self, plan: Plan) -> None:
        """Take the plan: queue its rollouts, re-queue missing verdicts, mark tasks whose selections are stale."""
        for spec in plan.specs:
            self.books[spec.task_id].queued.append(spec)
        for rollout in plan.finished.values():
            book = self.books[rollout.task_id]
            book.finished[rollout.rollout_id] = rollout
            self.sandbox_s.append(rollout.timings.sandbox_s)
            for role in ROLES:
                if rollout.rollout_id in self.verdicts[role]:
                    self.cache.learn(rollout, self.verdicts[role][rollout.rollout_id])
        for rollout in plan.verify:
            self.enqueue_verify(rollout, roles_missing(rollout, self.verdicts), attempt=1)
        selected = {(s.task_id, s.selector) for s in self.store.selections()}
        for book in self.books.values():
            book.stopped = book.task.task_id in plan.skipped
            wanted = {(book.task.task_id, name) for name in self.config.select.selectors}
            book.changed = bool(book.finished) and not wanted <= selected

    # ------------------------------------------------------------------- loop
    def run(self) -> None:
        """Drive every unit to completion, in completion order; returns early (interrupted) on Ctrl-C."""
        try:
            while self._busy():
                self._submit()
                refs = list(self.inflight)
                if refs:
                    ready, rest = ray.wait(refs, num_returns=1, timeout=TICK_S)
                    if ready and rest:
                        ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
                    for ref in ready:
                        self.handle(ref, self.inflight.pop(ref))
                self._poll()
                self.select_ready()
                self.emit("tick")
        except KeyboardInterrupt:
            self._interrupt()

    def _busy(self) -> bool:
        return bool(self.inflight) or bool(self.verify_queue) or any(b.open or b.changed for b in self.books.values())

    def _count(self, kind: str) -> int:
        return sum(1 for u in self.inflight.values() if u.kind == kind)

    def _submit(self) -> None:
        rollouts, preparing = self._count("rollout"), self._count("prepare")
        for book in self.books.values():
            if not book.queued:
                continue
            if not book.prepared:
                if not book.preparing and preparing < PREPARE_AHEAD:
                    book.preparing, preparing = True, preparing + 1
                    prep = self._remote_prepare.remote(self._task_refs[book.task.task_id], self._config_ref, self._factories_ref)
                    self.inflight[prep] = Unit("prepare", book.task.task_id)
                continue
            while book.queued and rollouts < self.config.max_pending:
                spec = book.queued.popleft()
                ref = self._remote_rollout.remote(
                    self._task_refs[spec.task_id], spec, self._config_ref, self._factories_ref, self.tracker
                )
                self.inflight[ref] = Unit("rollout", spec.task_id, spec.attempt, spec=spec, budget_s=self.config.deadline_s)
                book.running += 1
                rollouts += 1
        verifying = self._count("verify")
        while self.verify_queue and verifying < max(self.config.verify.concurrency, 1):
            verifying += self.submit_verify(*self.verify_queue.popleft())

    def launch_verify(self, rollout: Rollout, roles: list[Role], attempt: int, budget: float) -> None:
        """Submit one verification unit with its share of the rollout's deadline."""
        args = (self._config_ref, self._factories_ref, self.tracker, attempt, budget)
        ref = self._remote_verify.remote(self._task_refs[rollout.task_id], rollout, roles, *args)
        self.inflight[ref] = Unit("verify", rollout.task_id, attempt, rollout=rollout, roles=roles, budget_s=budget)

    def select_ready(self) -> None:
        """Run the selectors on every task that has nothing open and something new."""
        for book in self.books.values():
            if book.changed and not book.open:
                self.selection.select_task(book, self.verdicts, self.emit)
