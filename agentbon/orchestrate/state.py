"""The driver's bookkeeping: units in flight, what each task still waits for, and verdict dedupe."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from agentbon.types import Role, Rollout, RolloutSpec, Task, Verdict, patch_hash

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
    """Seconds this unit may run before the driver kills it (its share of the rollout's hard deadline)."""
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
    changed: bool = False
    """Something new was recorded: the task is selected again once it has nothing open."""
    stopped: bool = False
    """Early stop fired (a migration task has a passing candidate)."""

    @property
    def open(self) -> bool:
        return bool(self.queued) or self.running > 0 or self.verifying > 0 or self.preparing


DedupeKey = tuple[str, str, Role]


@dataclass
class VerdictCache:
    """Verdicts by (task, patch hash, role): identical patches are verified once and share the verdict."""

    enabled: bool = True
    known: dict[DedupeKey, Verdict] = field(default_factory=dict)
    waiting: dict[tuple[str, str], list[Rollout]] = field(default_factory=dict)
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


Inflight = dict[Any, Unit]
