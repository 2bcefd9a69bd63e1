"""What a run says while it runs: typed events, written once through one ``Recorder`` to the store and the display.

Each event is a frozen pydantic model with a ``kind``; the recorder appends the persistent ones to the run's
event log (``events.jsonl``) and hands every one to the display, which matches on its class (``agentbon.progress``).
Rollouts and verdicts go through the recorder too (their folders are written before the event that records them), so
no part of the driver writes to the store and to the display separately. The store reads the log back as the same
classes (``RunStore.recorded``). See docs/architecture.md, "Events: one recorder".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentbon.models.choice import Choice
from agentbon.types import Rollout, Selection, Verdict, error_kind_of

if TYPE_CHECKING:
    from agentbon.store import RunStore

Display = Callable[["Event"], None]
"""What shows progress: called with every event (``agentbon.progress``)."""


class Event(BaseModel):
    """Base of every event: its ``kind`` names it in the event log and to the display."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ClassVar[str] = ""
    persist: ClassVar[bool] = True
    """False for events only the display needs (start of a unit, tokens, ticks) and for those the store writes
    itself (a rollout's, a verdict's)."""

    def fields(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def read(cls, line: dict[str, Any]) -> Self | None:
        """The event as a line of the log records it, read leniently for logs written by other versions: keys the
        class does not know (``type``, ``ts``, fields a version dropped) are ignored (an ``extra="allow"`` event keeps
        them); a line whose known fields do not validate (a field a newer version requires is missing) reads as
        None, and the store's ``recorded`` leaves it out."""
        allowed = cls.model_config.get("extra") == "allow"
        known = {k: v for k, v in line.items() if k in cls.model_fields or (allowed and k not in ("type", "ts"))}
        try:
            return cls.model_validate(known)
        except ValidationError:
            return None


class Start(Event):
    kind: ClassVar[str] = "start"
    n: int
    tasks: int
    planned: int
    finished: int


class PlanMade(Event):
    kind: ClassVar[str] = "plan"
    persist: ClassVar[bool] = False
    tasks: int
    n: int
    planned: int
    finished: int
    verify: int
    skipped: int


class UnitStarted(Event):
    kind: ClassVar[str] = "started"
    persist: ClassVar[bool] = False
    unit: str
    rollout_id: str


class Tokens(Event):
    """Tokens the model calls finished since the last report spent: ``n`` in all, ``completion`` of them generated."""

    kind: ClassVar[str] = "tokens"
    persist: ClassVar[bool] = False
    n: int
    completion: int = 0


class ServerTokens(Event):
    """Completion tokens the run's model server has generated so far by its own count (vLLM's ``/metrics``): the
    live rate, before any long call has finished."""

    kind: ClassVar[str] = "server_tokens"
    persist: ClassVar[bool] = False
    generated: int


class Infra(Event):
    """A unit failed on infrastructure (retried within the bound, or recorded as ``infra_error``)."""

    kind: ClassVar[str] = "infra"
    unit: str
    task_id: str
    rollout_id: str | None = None
    attempt: int = 1
    error: str
    message: str
    node_id: str | None = None
    retry: bool = False
    """True when the unit runs again; False when this attempt is the last (the failure stays in the store)."""


class PrepareFailed(Event):
    """A task's environment could not be prepared and its retries are spent: recorded once, as the task's. Its
    rollouts are neither run nor recorded (never the model's failures); the same command prepares it again and runs
    them, and the run exits 3 meanwhile (docs/failure-taxonomy.md, "Task preparation")."""

    kind: ClassVar[str] = "prepare_failed"
    task_id: str
    error: str
    """The exception's class name (``TaskError``, ``ImageBuildError``, ``PermissionError``...)."""
    message: str
    attempts: int
    rollouts: int
    """Rollouts of the task that were waiting for it (not run)."""


class EarlyStop(Event):
    """A migration task passed: its rollouts outside the fixed part were skipped or cancelled."""

    kind: ClassVar[str] = "early_stop"
    task_id: str
    skipped: list[str] = Field(default_factory=list)
    cancelled: list[str] = Field(default_factory=list)
    rollouts_not_run: int = 0
    est_sandbox_s_saved: float = 0.0
    mean_sandbox_s: float = 0.0
    fixed: int = 0
    """Rollouts ``0..fixed-1`` ran to the end regardless (the part the curves use)."""


class Allocated(Event):
    """The batch budget gave a task one more rollout (orchestrate/budget.py): which, why, and what is left."""

    kind: ClassVar[str] = "allocated"
    task_id: str
    index: int
    estimate: float
    """The chance that this rollout is the task's first verified pass, as the allocator estimated it."""
    reason: str
    left: int
    """Rollouts of the budget left after this one."""


class Cancelled(Event):
    kind: ClassVar[str] = "cancelled"
    persist: ClassVar[bool] = False
    rollout_id: str


class Selected(Event):
    kind: ClassVar[str] = "selected"
    persist: ClassVar[bool] = False
    task_id: str


class SelectorError(Event):
    """A selector failed on a task. With ``infra`` (its critic's server down, timed out or misconfigured; anything the
    taxonomy places outside the model) the task is left out of that selector's curves and winners until a resume
    selects it again; otherwise the selector made no choice there (docs/failure-taxonomy.md, "Selection")."""

    kind: ClassVar[str] = "selector_error"
    task_id: str
    selector: str
    error: str
    """``Kind: message``."""
    error_kind: str = ""
    """The failure's kind (``ConnectionError``, ``CriticError``...): the head of ``error`` in logs written before it
    was recorded apart."""
    infra: bool = False

    @model_validator(mode="before")
    @classmethod
    def _kind_of_older(cls, data: object) -> object:
        if isinstance(data, dict) and not data.get("error_kind") and "error" in data:
            return {**data, "error_kind": error_kind_of(str(data["error"]))}
        return data


class Warning(Event):  # noqa: A001 - the event's name in the log
    kind: ClassVar[str] = "warning"
    message: str


class Shipped(Event):
    """What the run carries to its workers through Ray (no shared filesystem: orchestrate/shipping.py)."""

    kind: ClassVar[str] = "shipped"
    tasks: int
    repos: int
    repo_bytes: int
    file_bytes: int


class ServerRestart(Event):
    kind: ClassVar[str] = "server_restart"
    error: str = ""
    """Why the restart failed (empty when the server came back); the run goes on, and the rollouts that find the
    server down fail as infra errors until it answers again or ``run.infra_abort_after`` stops the run."""


class Interrupted(Event):
    kind: ClassVar[str] = "interrupted"
    pending: list[str] = Field(default_factory=list)


class Aborted(Event):
    """The driver stopped the run itself (infra errors in a row): resumable, like an interrupt."""

    kind: ClassVar[str] = "aborted"
    reason: str
    pending: list[str] = Field(default_factory=list)


class End(Event):
    kind: ClassVar[str] = "end"
    interrupted: bool
    wall_s: float
    aborted: str | None = None


class Note(Event):
    """A line for the user before the run's store exists (the server choice's progress)."""

    kind: ClassVar[str] = "note"
    persist: ClassVar[bool] = False
    message: str


class Tick(Event):
    """One turn of the driver's loop: lets the display judge the server's rate and print its periodic line."""

    kind: ClassVar[str] = "tick"
    persist: ClassVar[bool] = False


class RolloutDone(Event):
    """A rollout's record, saved (``RunStore.save_rollout`` logs it as a ``rollout`` event)."""

    kind: ClassVar[str] = "rollout"
    persist: ClassVar[bool] = False
    rollout: Rollout


class VerdictDone(Event):
    """A verdict, saved (``RunStore.save_verdict`` logs it as a ``verdict`` event)."""

    kind: ClassVar[str] = "verdict"
    persist: ClassVar[bool] = False
    verdict: Verdict


class LauncherChosen(Event, Choice):
    """Which server runs the model and why (a ``models.choice.Choice``), at the start of every invocation that starts
    one."""

    kind: ClassVar[str] = "launcher"


class ModelStats(Event):
    """The serving side's figures at the end of an invocation (``ModelService.stats``): the report's ``serving``.

    The fields the report reads are named; the rest (router counts, endpoints) are kept as they came."""

    model_config = ConfigDict(frozen=True, extra="allow")
    kind: ClassVar[str] = "model_stats"
    launcher: str | None = None
    """The launcher that started the server; None for endpoints given."""
    start_s: float | None = None
    """Seconds the server or engines took to start."""
    source: str | None = None
    """Where the cache figures come from: ``metrics`` (the servers' ``/metrics``) or ``engines`` (engine actors)."""
    prefix_cache_queries: int | None = None
    prefix_cache_hits: int | None = None
    gpu_s: float | None = None
    """Engine actors: busy seconds x GPUs over the invocation."""
    gpu_held_s: float | None = None
    engine_busy_s: float | None = None
    per_engine: list[dict[str, Any]] = Field(default_factory=list)
    error: str | None = None
    """Why the figures could not be read (they are figures only: the run goes on)."""


class Recorder:
    """The one writer of a run's events: the store (when the event persists) and then the display."""

    def __init__(self, store: RunStore, display: Display | None = None):
        self.store = store
        self.display: Display = display or (lambda event: None)

    def __call__(self, event: Event) -> None:
        if event.persist:
            self.store.append(event.kind, **event.fields())
        self.display(event)

    def rollout(self, rollout: Rollout, messages: list[dict[str, Any]]) -> None:
        """Save a rollout (its folder, then its event) and show it."""
        self.store.save_rollout(rollout, messages)
        self.display(RolloutDone(rollout=rollout))

    def verdict(self, verdict: Verdict) -> None:
        """Save a verdict and show it."""
        self.store.save_verdict(verdict)
        self.display(VerdictDone(verdict=verdict))

    def selection(self, selection: Selection) -> None:
        self.store.save_selection(selection)
