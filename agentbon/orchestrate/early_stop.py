"""Early stop for migration tasks: once a task has a passing candidate, its other rollouts are not needed.

When the selection evidence is the grade (``task.evidence_is_grade``), a candidate that passes is a
correct answer the tests themselves select, so further rollouts of that task buy nothing. Rollouts not
yet started are skipped (taken off the queue, or cancelled while Ray still holds them); running ones
are cancelled (a ``KeyboardInterrupt`` lets the worker close its sandbox; forced after a grace period).
A cancelled rollout is never recorded, even when its result arrives after the cancel.

Rollouts ``0..run.early_stop_fixed-1`` are exempt: they always run to the end, so every task has a part of
its sample fixed in advance, drawn without regard to outcomes, from which the report computes unbiased
curves (docs/estimators.md). The compute saved is estimated from the run's mean sandbox-seconds per rollout.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from agentbon.config import RunConfig
from agentbon.orchestrate.events import EarlyStop
from agentbon.orchestrate.state import Inflight, TaskBook, Unit, mean
from agentbon.types import Verdict


@dataclass
class Saved:
    """What early stop saved over the run."""

    tasks: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Rollouts never started."""
    cancelled: list[str] = field(default_factory=list)
    """Rollouts cancelled while running."""
    sandbox_s: float = 0.0
    """Estimated sandbox-seconds not spent."""

    @property
    def rollouts_not_run(self) -> int:
        return len(self.skipped) + len(self.cancelled)


def should_stop(book: TaskBook, verdict: Verdict, config: RunConfig) -> bool:
    """True when this verdict is the first grade pass of a migration task with early stop on."""
    return (
        config.early_stop
        and book.task.evidence_is_grade
        and not book.stopped
        and verdict.role == "grade"
        and verdict.status == "pass"
    )


def stop_task(book: TaskBook, inflight: Inflight, sandbox_s: list[float], now: float | None = None) -> EarlyStop:
    """Skip the task's queued rollouts and mark its running ones for cancellation; return the event to record.

    Rollouts of the fixed part (index < ``book.fixed``) stay queued or running. The caller cancels the units
    marked here (``unit.cancel == "early_stop"``) with ``ray.cancel``.
    """
    now = time.time() if now is None else now
    book.stopped = True
    per_rollout = mean(sandbox_s)
    skipped = [spec.rollout_id for spec in book.queued if spec.index >= book.fixed]
    kept = [spec for spec in book.queued if spec.index < book.fixed]
    book.queued.clear()
    book.queued.extend(kept)
    cancelled: list[str] = []
    saved = per_rollout * len(skipped)
    for unit in _running_rollouts(book, inflight):
        unit.cancel, unit.cancelled_at = "early_stop", now
        if unit.started_at is None:
            skipped.append(unit.rollout_id)  # still queued inside Ray: never started
            saved += per_rollout
        else:
            cancelled.append(unit.rollout_id)
            saved += max(per_rollout - (now - unit.started_at), 0.0)
    return EarlyStop(
        task_id=book.task.task_id, skipped=sorted(skipped), cancelled=sorted(cancelled),
        rollouts_not_run=len(skipped) + len(cancelled), est_sandbox_s_saved=round(saved, 1),
        mean_sandbox_s=round(per_rollout, 2), fixed=book.fixed,
    )


def _running_rollouts(book: TaskBook, inflight: Inflight) -> list[Unit]:
    return [
        u for u in inflight.values()
        if u.kind == "rollout" and u.task_id == book.task.task_id and u.cancel is None
        and u.spec is not None and u.spec.index >= book.fixed
    ]


def add(saved: Saved, event: EarlyStop) -> None:
    """Fold one early-stop event into the run's totals."""
    saved.tasks.append(event.task_id)
    saved.skipped += event.skipped
    saved.cancelled += event.cancelled
    saved.sandbox_s += event.est_sandbox_s_saved
