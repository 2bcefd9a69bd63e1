"""The driver's bookkeeping: units in flight, what each task still waits for, and verdict dedupe."""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agentbon.types import Role, Rollout, RolloutSpec, Task, Verdict, patch_hash

if TYPE_CHECKING:
    from agentbon.config import RunConfig
    from agentbon.orchestrate.events import Recorder
    from agentbon.orchestrate.factories import Factories
    from agentbon.orchestrate.faults import RetryBudget
    from agentbon.store import RunStore

UnitKind = Literal["prepare", "rollout", "verify"]


@dataclass
class Unit:
    """One submitted unit of work (a Ray task)."""

    kind: UnitKind
    task_id: str
    attempt: int = 1
    spec: RolloutSpec | None = None
    rollout: Rollout | None = None
    """The candidate a verify unit checks."""
    roles: list[Role] = field(default_factory=list)
    budget_s: float = 0.0
    """Seconds this unit may run before the driver kills it (a rollout's hard deadline, a verification's budget)."""
    submitted_at: float = field(default_factory=time.time)
    started_at: float | None = None
    node_id: str | None = None
    cancel: str | None = None
    """Why the driver cancelled it: ``early_stop``, ``deadline`` or ``interrupt``."""
    cancelled_at: float | None = None
    forced: bool = False

    @property
    def rollout_id(self) -> str:
        if self.spec is not None:
            return self.spec.rollout_id
        return self.rollout.rollout_id if self.rollout is not None else ""

    @property
    def key(self) -> str:
        """How the tracker names this unit."""
        return f"{self.kind}:{self.rollout_id}:{self.attempt}" if self.kind != "prepare" else f"prepare:{self.task_id}"


@dataclass
class TaskBook:
    """What one task is still waiting for."""

    task: Task
    queued: deque[RolloutSpec] = field(default_factory=deque)
    prepared: bool = False
    preparing: bool = False
    prepare_attempts: int = 0
    running: int = 0
    """Rollout units in flight."""
    verifying: int = 0
    """Verifications queued or in flight."""
    finished: dict[str, Rollout] = field(default_factory=dict)
    revision: int = 0
    """Bumped whenever a rollout of the task is finished or one of its verdicts is recorded (what the batch
    budget's per-task state is computed from: the driver recomputes a task's only when this moved)."""
    changed: bool = False
    """Something new was recorded: the task is selected again once it has nothing open."""
    stopped: bool = False
    """Early stop fired (a migration task has a passing candidate)."""
    fixed: int = 0
    """Early stop never skips or cancels rollouts ``0..fixed-1`` (the part of the sample fixed in advance)."""
    delayed: list[tuple[float, RolloutSpec]] = field(default_factory=list)
    """Infra retries waiting for their back-off to pass: (time they may run, spec)."""
    prepare_not_before: float = 0.0
    unprepared: bool = False
    """Its environment could not be prepared (retries spent): nothing more runs for it until a resume."""

    @property
    def open(self) -> bool:
        return bool(self.queued or self.delayed) or self.running > 0 or self.verifying > 0 or self.preparing

    def release(self, now: float) -> None:
        """Move the retries whose back-off has passed to the front of the queue."""
        due = [spec for at, spec in self.delayed if at <= now]
        if due:
            self.delayed = [(at, spec) for at, spec in self.delayed if at > now]
            self.queued.extendleft(reversed(due))


Inflight = dict[Any, Unit]
DedupeKey = tuple[str, str, Role]


@dataclass
class VerdictCache:
    """Verdicts by (task, patch hash, role): identical patches are verified once and share the verdict."""

    enabled: bool = True
    known: dict[DedupeKey, Verdict] = field(default_factory=dict)
    waiting: dict[tuple[str, str], list[tuple[Rollout, list[Role]]]] = field(default_factory=dict)
    """Rollouts whose patch is being verified right now under another rollout, by (task, hash)."""

    def learn(self, rollout: Rollout, verdict: Verdict) -> None:
        """Remember a decided verdict (infra errors are never shared)."""
        if self.enabled and verdict.status != "infra_error":
            # The first verdict stays the source: shared copies never become sources themselves.
            self.known.setdefault((rollout.task_id, patch_hash(rollout.patch), verdict.role), verdict)

    def lookup(self, rollout: Rollout, roles: list[Role]) -> list[Verdict] | None:
        """Copies of known verdicts for this rollout in every role, or None when any role is unknown."""
        if not self.enabled:
            return None
        h = patch_hash(rollout.patch)
        found = [self.known.get((rollout.task_id, h, role)) for role in roles]
        if any(v is None for v in found):
            return None
        return [share(v, rollout) for v in found if v is not None]


def share(verdict: Verdict, rollout: Rollout) -> Verdict:
    """A verdict for ``rollout`` copied from an identical patch's verdict."""
    if verdict.rollout_id == rollout.rollout_id:
        return verdict
    reason = f"{verdict.reason} (same patch as {verdict.rollout_id})".strip()
    return verdict.model_copy(update={"rollout_id": rollout.rollout_id, "reason": reason, "duration_s": 0.0})


def mean(values: list[float], default: float = 0.0) -> float:
    return sum(values) / len(values) if values else default



@dataclass
class RunState:
    """Everything the driver's stages share: the books, the units in flight, the verdicts, the recorder.

    One object, passed explicitly to each stage (``RolloutStage``, ``VerifyStage``, ``Supervisor``), instead of
    stages mixed into one class: each stage's reads and writes are visible in its signature.
    """

    config: RunConfig
    store: RunStore
    """Read only here: writes go through ``record``."""
    record: Recorder
    """The one writer of events, rollouts and verdicts."""
    factories: Factories
    books: dict[str, TaskBook]
    verdicts: dict[Role, dict[str, Verdict]]
    cache: VerdictCache
    retry: RetryBudget
    """Of infra failures."""
    inflight: Inflight = field(default_factory=dict)
    verify_queue: deque[tuple[Rollout, list[Role], int]] = field(default_factory=deque)
    verify_delayed: list[tuple[float, Rollout, list[Role], int]] = field(default_factory=list)
    """Verification retries waiting for their back-off to pass."""
    infra_streak: int = 0
    """Units in a row whose last attempt failed on infrastructure, with nothing finishing in between."""
    sandbox_s: list[float] = field(default_factory=list)
    background: list[Any] = field(default_factory=list)
    """Fire-and-forget units (reapers) awaited at the end."""

    @property
    def run_id(self) -> str:
        return str(self.store.run_id)

    def release(self, now: float) -> None:
        """Queue every retry whose back-off has passed."""
        for book in self.books.values():
            book.release(now)
        due = [item for item in self.verify_delayed if item[0] <= now]
        if due:
            self.verify_delayed = [item for item in self.verify_delayed if item[0] > now]
            self.verify_queue.extendleft(reversed([(r, roles, attempt) for _, r, roles, attempt in due]))

    def count(self, kind: UnitKind) -> int:
        """Units of one kind in flight."""
        return sum(1 for u in self.inflight.values() if u.kind == kind)

    def miscounted(self) -> list[str]:
        """The tasks whose books disagree with the units and queues they count (``running``: rollout units in
        flight; ``verifying``: verifications queued, waiting for a back-off or for an identical patch's verdict, or in
        flight; ``preparing``: a prepare unit in flight). Empty unless the driver's bookkeeping has a bug, which would
        leave a task open forever or select it before its candidates are verified."""
        units = Counter((u.kind, u.task_id) for u in self.inflight.values())
        verifying = Counter(r.task_id for r, _, _ in self.verify_queue)
        verifying.update(r.task_id for _, r, _, _ in self.verify_delayed)
        verifying.update(r.task_id for waiters in self.cache.waiting.values() for r, _ in waiters)
        wrong = []
        for task_id, book in self.books.items():
            counted = (units["rollout", task_id], verifying[task_id] + units["verify", task_id], units["prepare", task_id])
            if (book.running, book.verifying, int(book.preparing)) != counted:
                wrong.append(f"{task_id}: running/verifying/preparing {book.running}/{book.verifying}/"
                             f"{int(book.preparing)}, units and queues {counted[0]}/{counted[1]}/{counted[2]}")  # fmt: skip
        return wrong
