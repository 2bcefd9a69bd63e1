"""The driver loop: submit units within bounds, consume results in completion order, enforce deadlines.

Work flows through three stages (prepare a task's environment → rollouts → verification), each unit a
Ray task. Rollouts hold a sandbox slot (custom resource); at most ``max_pending`` are submitted and
unfinished; verification has its own slots and ``verify.concurrency``. Results are taken with
``ray.wait`` as they complete and handed to the stage of their unit's kind (``RolloutStage``,
``VerifyStage``); the ``Supervisor`` learns when units really started (their hard deadline counts from
there) and stops everything on Ctrl-C. Every event goes through one ``Recorder`` (store, then display).

Ctrl-C (and SIGTERM where the caller made it Ctrl-C) sets a flag the loop checks on every pass, so the
interrupt never lands inside Ray's or the store's code: the loop cancels everything, reaps the run's
sandboxes on every node and returns with the store consistent (everything recorded is complete; the rest
runs again on resume). A second Ctrl-C raises ``KeyboardInterrupt`` at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import ray

from agentbon.config import RunConfig
from agentbon.orchestrate import shipping, workers
from agentbon.orchestrate.budget import Allocator, TaskState
from agentbon.orchestrate.cluster import Cluster, is_ctrl_c_handler
from agentbon.orchestrate.early_stop import Saved
from agentbon.orchestrate.events import Allocated, Recorder, ServerTokens, Shipped, Tick
from agentbon.orchestrate.factories import Factories
from agentbon.orchestrate.faults import Failure, RetryBudget, classify, deadline_failure
from agentbon.orchestrate.plan import ROLES, Plan, make_spec, roles_missing
from agentbon.orchestrate.rollout_stage import RolloutStage
from agentbon.orchestrate.selection_stage import SelectionStage
from agentbon.orchestrate.state import RunState, TaskBook, Unit, UnitKind, VerdictCache
from agentbon.orchestrate.supervise import Supervisor
from agentbon.orchestrate.tracker import start_tracker
from agentbon.orchestrate.verify_stage import VerifyStage
from agentbon.types import Role, Rollout, Task

TICK_S = 0.5
"""Longest wait for a result before the driver polls the tracker and checks deadlines."""
SERVER_POLL_S = 15.0
"""How often the driver reads the model server's own count of generated tokens (the live rate on display)."""
PREPARE_AHEAD = 2
"""Task environments prepared at once ahead of their rollouts."""

Handler = Callable[[Unit, Any, Failure | None], None]


class Driver:
    """Runs a plan to completion (or until interrupted) and records everything through the recorder."""

    def __init__(
        self, tasks: list[Task], config: RunConfig, record: Recorder, factories: Factories, cluster: Cluster,
        restart_server: Callable[[], None] | None = None, server_tokens: Callable[[], int | None] | None = None,
    ):
        store = record.store
        self.state = RunState(
            config=config, store=store, record=record, factories=factories,
            books={t.task_id: TaskBook(t, fixed=config.fixed_part()) for t in tasks},
            verdicts={role: store.verdicts(role) for role in ROLES},
            cache=VerdictCache(enabled=config.verify.dedupe),
            retry=RetryBudget(config.infra_retries, config.infra_backoff_s),
        )
        self.cluster = cluster
        self.saved = Saved()
        self.interrupted = False
        self.aborted: str | None = None
        """Why the driver stopped the run itself (infra errors in a row), or None."""
        self._stop_requested = False
        self._server_tokens, self._server_polled = server_tokens, 0.0
        self.tracker = start_tracker()
        self.verify = VerifyStage(self.state, self._launch_verify, self.saved)
        self.rollouts = RolloutStage(self.state, self.verify.enqueue, restart_server)
        self.supervisor = Supervisor(self.state, self.tracker)
        self.selection = SelectionStage(config, factories.selector, store)
        self.handlers: dict[UnitKind, Handler] = {
            "prepare": self.rollouts.on_prepare, "rollout": self.rollouts.on_rollout, "verify": self.verify.on_verify,
        }
        self.allocator = Allocator.of(config)
        """The batch budget's (None without ``run.budget``): more rollouts for the tasks likeliest to gain."""
        self._budget_cache: dict[str, tuple[int, TaskState]] = {}
        self._config_ref, self._factories_ref = ray.put(config), ray.put(factories)
        self._task_refs: dict[str, Any] = {}
        if shipping.shipping(config):  # worker nodes need not see this disk: carry what they read from it
            parcels, manifest = shipping.pack(tasks, config.agent)
            self._task_refs = {task_id: ray.put(parcel) for task_id, parcel in parcels.items()}
            record(
                Shipped(
                    tasks=manifest.tasks, repos=manifest.repos, repo_bytes=manifest.repo_bytes,
                    file_bytes=manifest.file_bytes,
                )
            )
        else:
            self._task_refs = {t.task_id: ray.put(t) for t in tasks}
        self._remote_rollout = ray.remote(workers.run_rollout).options(**cluster.rollout_options())
        self._remote_verify = ray.remote(workers.run_verify).options(**cluster.verify_options())
        self._remote_prepare = ray.remote(workers.run_prepare).options(**cluster.rollout_options())

    # ------------------------------------------------------------------ setup
    def load(self, plan: Plan) -> None:
        """Take the plan: queue its rollouts, re-queue missing verdicts, mark tasks whose selections are stale."""
        state = self.state
        for spec in plan.specs:
            state.books[spec.task_id].queued.append(spec)
        for rollout in plan.finished.values():
            book = state.books[rollout.task_id]
            book.finished[rollout.rollout_id] = rollout
            book.revision += 1
            state.sandbox_s.append(rollout.timings.sandbox_s)
            for role in ROLES:
                if rollout.rollout_id in state.verdicts[role]:
                    state.cache.learn(rollout, state.verdicts[role][rollout.rollout_id])
        for rollout in plan.verify:
            self.verify.enqueue(rollout, roles_missing(rollout, state.verdicts))
        # A selection whose latest attempt failed on infrastructure is not one: those tasks are selected again.
        selected = {(s.task_id, s.selector) for s in state.store.standing_selections()}
        for book in state.books.values():
            book.stopped = book.task.task_id in plan.skipped or book.task.task_id in plan.stopped
            wanted = {(book.task.task_id, name) for name in state.config.select.selectors}
            book.changed = bool(book.finished) and not wanted <= selected

    # ------------------------------------------------------------------- loop
    def run(self) -> None:
        """Drive every unit to completion, in completion order; returns early (interrupted) on Ctrl-C."""
        try:
            with self._ctrl_c_as_flag():
                while not self._stop_requested:
                    self._allocate()
                    if not self._busy():
                        break
                    self._submit()
                    self._take_results()
                    if self._stop_requested:
                        break
                    wrong = self.state.miscounted()  # cheap next to a tick; a bug here would hang the run or misselect
                    assert not wrong, f"the driver's books disagree with its units: {'; '.join(wrong[:3])}"
                    self.supervisor.poll()
                    self._poll_server()
                    self._select_ready()
                    self.state.record(Tick())
                    if self._too_many_infra_errors():
                        break
        except KeyboardInterrupt:
            self._stop_requested = True
        if self._stop_requested:
            self.interrupted = True
            self.supervisor.interrupt()
        elif self.aborted:
            self.supervisor.interrupt(reason=self.aborted)

    def _poll_server(self) -> None:
        """Every ``SERVER_POLL_S``: the server's own count of generated tokens, for the display (figures only)."""
        if self._server_tokens is None or time.monotonic() - self._server_polled < SERVER_POLL_S:
            return
        self._server_polled = time.monotonic()
        try:
            generated = self._server_tokens()
        except Exception:  # a figure for the display: never a reason to stop the run
            return
        if generated is not None:
            self.state.record(ServerTokens(generated=generated))

    def _too_many_infra_errors(self) -> bool:
        """True (and ``aborted`` set) once ``infra_abort_after`` units in a row ended in infra errors."""
        limit = self.state.config.infra_abort_after
        if limit and self.state.infra_streak >= limit:
            self.aborted = (
                f"{self.state.infra_streak} units in a row failed on infrastructure with their retries spent "
                f"(run.infra_abort_after={limit}); the run stopped so that the rest of the batch is not burnt"
            )
        return self.aborted is not None

    def _take_results(self) -> None:
        refs = list(self.state.inflight)
        if not refs:
            return
        ready, rest = ray.wait(refs, num_returns=1, timeout=TICK_S)
        if ready and rest:
            ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
        for ref in ready:
            if self._stop_requested:
                return  # the rest are cancelled and run again on resume
            unit = self.state.inflight.pop(ref)
            try:
                value, failure = ray.get(ref), None
            except Exception as e:  # Ray failures surface here: worker or node died, cancelled, a prepare unit's error
                value, failure = None, classify(e, place="prepare" if unit.kind == "prepare" else "worker")
                if unit.node_id is None:  # its start report may not have been read yet: where did it run?
                    self.supervisor.poll(also=unit)
                if unit.cancel == "deadline":
                    failure = deadline_failure(unit.budget_s)
            self.handlers[unit.kind](unit, value, failure)

    @contextlib.contextmanager
    def _ctrl_c_as_flag(self) -> Iterator[None]:
        """While the loop runs, SIGINT (and a SIGTERM the caller made Ctrl-C) sets a flag the loop checks."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def request_stop(signum: int, frame: Any) -> None:
            if self._stop_requested:
                raise KeyboardInterrupt  # a second Ctrl-C: now
            self._stop_requested = True

        signums = [signal.SIGINT]
        if is_ctrl_c_handler(signal.getsignal(signal.SIGTERM)):
            signums.append(signal.SIGTERM)
        before = {s: signal.getsignal(s) for s in signums}
        for s in signums:
            signal.signal(s, request_stop)
        try:
            yield
        finally:
            for s, handler in before.items():
                signal.signal(s, handler)

    def _busy(self) -> bool:
        state = self.state
        return bool(state.inflight or state.verify_queue or state.verify_delayed) or any(
            b.open or b.changed for b in state.books.values()
        )

    def _submit(self) -> None:
        state = self.state
        now = time.time()
        state.release(now)
        rollouts, preparing = state.count("rollout"), state.count("prepare")
        for book in state.books.values():
            if not book.queued:
                continue
            if not book.prepared:
                if not book.preparing and preparing < PREPARE_AHEAD and book.prepare_not_before <= now:
                    book.preparing, preparing = True, preparing + 1
                    prep = self._remote_prepare.remote(self._task_refs[book.task.task_id], self._config_ref, self._factories_ref)
                    state.inflight[prep] = Unit("prepare", book.task.task_id)
                continue
            while book.queued and rollouts < state.config.max_pending:
                spec = book.queued.popleft()
                ref = self._remote_rollout.remote(
                    self._task_refs[spec.task_id], spec, self._config_ref, self._factories_ref, self.tracker
                )
                state.inflight[ref] = Unit("rollout", spec.task_id, spec.attempt, spec=spec, budget_s=state.config.deadline_s)
                book.running += 1
                rollouts += 1
        self.verify.submit_ready()

    def _allocate(self) -> None:
        """Under a batch budget, give out rollouts for the sandbox slots that nothing queued will fill."""
        if self.allocator is None:
            return
        books = self.state.books
        waiting = sum(len(b.queued) + len(b.delayed) + b.running for b in books.values())
        free = self.cluster.slots - waiting
        if free <= 0:
            return
        states = budget_states(books, self.state.verdicts["evidence"], self._budget_cache)
        for decision in self.allocator.next(states, free):
            book = books[decision.task_id]
            running = {u.spec.index for u in self.state.inflight.values() if u.spec and u.task_id == decision.task_id}
            index = next_index(book, running)
            book.queued.append(make_spec(self.state.config, self.state.store.run_id, decision.task_id, index))
            self.state.record(
                Allocated(task_id=decision.task_id, index=index, estimate=decision.estimate, reason=decision.reason,
                          left=decision.left)
            )  # fmt: skip

    def _launch_verify(self, rollout: Rollout, roles: list[Role], attempt: int, budget: float) -> None:
        """Submit one verification unit: ``budget`` seconds for each role, so the unit's deadline is their sum."""
        args = (self._config_ref, self._factories_ref, self.tracker, attempt, budget)
        ref = self._remote_verify.remote(self._task_refs[rollout.task_id], rollout, roles, *args)
        unit = Unit("verify", rollout.task_id, attempt, rollout=rollout, roles=roles, budget_s=budget * len(roles))
        self.state.inflight[ref] = unit

    def _select_ready(self) -> None:
        """Run the selectors on every task that has nothing open and something new."""
        for book in self.state.books.values():
            if book.changed and not book.open:
                self.selection.select_task(book, self.state.verdicts, self.state.record)


def budget_states(
    books: dict[str, TaskBook], evidence: dict[str, Any], cache: dict[str, tuple[int, TaskState]]
) -> dict[str, TaskState]:
    """``budget_state`` of every task not stopped, recomputed only for the tasks whose ``revision`` moved since
    ``cache`` saw them (a driver tick with a free slot would otherwise walk every rollout of the batch); what is
    given out but not finished is read afresh."""
    out: dict[str, TaskState] = {}
    for task_id, book in books.items():
        if book.stopped or book.unprepared:
            continue
        seen = cache.get(task_id)
        if seen is None or seen[0] != book.revision:
            seen = cache[task_id] = (book.revision, budget_state(book, evidence))
        out[task_id] = dataclasses.replace(seen[1], allotted=allotted(book))
    return out


def allotted(book: TaskBook) -> int:
    """Rollout indices the task has been given: finished, queued, waiting for a retry or running."""
    return len(book.finished) + len(book.queued) + len(book.delayed) + book.running


def budget_state(book: TaskBook, evidence: dict[str, Any]) -> TaskState:
    """What the allocator needs to know of a task: its rollouts given out, finished and verified, its verified
    passes, how close its candidates came (share of evidence tests passed) and the tokens it used."""
    verdicts = [v for rid in book.finished if (v := evidence.get(rid)) is not None and v.status != "infra_error"]
    shares = [sum(o == "passed" for o in v.tests.values()) / len(v.tests) for v in verdicts if v.tests]
    return TaskState(
        task_id=book.task.task_id,
        allotted=allotted(book),
        verified=len(verdicts),
        passes=sum(v.status == "pass" for v in verdicts),
        progress=max(shares, default=0.0),
        tokens=sum(r.usage.prompt_tokens + r.usage.completion_tokens for r in book.finished.values()),
        finished=len(book.finished),
        evidence_is_grade=book.task.evidence_is_grade,
    )


def next_index(book: TaskBook, running: set[int]) -> int:
    """The smallest rollout index of the task not finished, queued, waiting or running."""
    taken = {r.index for r in book.finished.values()} | {s.index for s in book.queued}
    taken |= {spec.index for _, spec in book.delayed} | running
    return next(i for i in range(len(taken) + 1) if i not in taken)
