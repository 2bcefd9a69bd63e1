"""Which failures are infrastructure and which are the model's: the failure taxonomy, in one place.

``TAXONOMY`` is the table of docs/failure-taxonomy.md as data: every row names a failure source, the exception
types that signal it, the places where it applies, and the outcome. Infrastructure outcomes are retried within a
bound, never counted in n, and run again on resume; model outcomes are counted and never retried. The place (where
in a unit the exception was raised) is an input: the model-failure default covers only the agent's own loop, and
whatever else is raised outside it (preparation, model construction, sandbox open, diff extraction, verification,
selection) is infrastructure unless a row says otherwise. ``classify`` is the only function that decides; the
driver, the workers and the report all follow what it says.
"""

from __future__ import annotations

import errno
import traceback
from dataclasses import dataclass
from typing import Literal, get_args

from ray import exceptions as rex

from agentbon.errors import (
    ContextLengthExceeded,
    EndpointMisconfigured,
    EngineUnavailable,
    ImageBuildError,
    InfraError,
    ModelError,
    ModelTimeout,
    PatchError,
    RolloutDeadline,
    SandboxDiskLimit,
    SandboxGone,
    SandboxSetupTimeout,
    ServerFailure,
    TaskError,
)

# Ray raising one of these means the process or machine under the unit went away, not that the unit failed.
RAY_INFRA: tuple[type[BaseException], ...] = (
    rex.WorkerCrashedError,
    rex.RayActorError,
    rex.NodeDiedError,
    rex.OwnerDiedError,
    rex.ObjectLostError,
    rex.LocalRayletDiedError,
    rex.RaySystemError,
    rex.OutOfMemoryError,
)
HOST_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.ENOMEM, errno.EMFILE, errno.ENFILE}
"""``OSError`` numbers that say the worker's machine ran out of something (disk, memory, file handles)."""


def _docker_errors() -> tuple[type[BaseException], ...]:
    try:
        import docker.errors
        import requests
    except ImportError:  # no Docker SDK: no Docker failure can happen
        return ()
    return (docker.errors.DockerException, requests.ConnectionError, requests.Timeout)


Place = Literal["prepare", "model", "sandbox", "agent", "diff", "close", "verify", "select", "worker"]
"""Where an exception was raised: preparing the task's environment, building the model client and the agent, opening
the sandbox, the agent's own loop, taking the patch, closing the sandbox, verifying, selecting, or around a unit (Ray
says its worker died, or its result could not come back)."""
PLACES: tuple[Place, ...] = get_args(Place)
OUTSIDE_AGENT: tuple[Place, ...] = tuple(p for p in PLACES if p != "agent")


@dataclass(frozen=True)
class Row:
    """One row of the failure taxonomy."""

    source: str
    """Where the failure comes from, in an operator's words."""
    types: tuple[type[BaseException], ...]
    infra: bool
    recorded_as: str
    """The rollout or verdict status it ends in when it is not (or no longer) retried."""
    server: bool = False
    """The model server is restarted before the retry."""
    places: tuple[Place, ...] = PLACES
    """Where the row applies (everywhere unless it says)."""


TAXONOMY: tuple[Row, ...] = (
    Row("sandbox container gone (killed, removed, engine restarted under it)", (SandboxGone,), True, "infra_error"),
    Row("sandbox did not start in time", (SandboxSetupTimeout,), True, "infra_error"),
    Row("Docker engine unreachable", (EngineUnavailable,), True, "infra_error"),
    Row("task image cannot be built or found", (ImageBuildError,), True, "infra_error"),
    Row(
        "task's repository or definition unusable on the worker (source gone, commit missing)",
        (TaskError,), True, "infra_error",
    ),
    Row("Docker engine API error (disk full, daemon 500, bad network name)", _docker_errors(), True, "infra_error"),
    Row("model server down or its engine dead", (ServerFailure,), True, "infra_error", server=True),
    Row("model server overloaded (timed out, answers a probe)", (ModelTimeout,), True, "infra_error"),
    Row(
        "endpoint refuses every request (unknown model name, authentication, a parameter it rejects)",
        (EndpointMisconfigured,), True, "infra_error",
    ),
    Row("rollout past its hard deadline", (RolloutDeadline,), True, "infra_error"),
    Row("any other agentbon infrastructure error", (InfraError,), True, "infra_error"),
    Row("Ray worker process or node died under the unit", RAY_INFRA, True, "infra_error"),
    Row("unit interrupted from outside (Ctrl-C reaching a worker, a cancel)", (KeyboardInterrupt,
        rex.TaskCancelledError), True, "infra_error"),
    Row("worker machine out of disk, memory or file handles", (MemoryError,), True, "infra_error"),
    Row(
        "conversation longer than the model's context", (ContextLengthExceeded,), False, "token_limit",
        places=("agent", "select"),
    ),
    Row(
        "model answered unusably (bad reply, rejected request)", (ModelError,), False, "agent_error",
        places=("agent", "select"),
    ),
    Row(
        "agent broke the repository or made a patch too large", (PatchError,), False, "agent_error",
        places=("agent", "diff"),
    ),
    Row(
        "sandbox wrote past its disk limit (stopped by the watchdog)", (SandboxDiskLimit,), False, "agent_error",
        places=("agent", "diff", "close"),
    ),
    Row("anything else escaping the agent's own loop", (BaseException,), False, "agent_error", places=("agent",)),
    Row(
        "anything else raised outside the agent's loop (preparation, model or sandbox set-up, taking the patch, "
        "verification, selection)",
        (BaseException,), True, "infra_error", places=OUTSIDE_AGENT,
    ),
)
"""First match wins among the rows that apply at the failure's place. The rows of the agent's own exits (submitted,
step/token/time limit, format error) are not exceptions: the agent returns them as the rollout's status. See
docs/failure-taxonomy.md."""


@dataclass(frozen=True)
class Failure:
    """A classified failure of one unit of work."""

    kind: str
    """The exception class name as recorded (``SandboxGone``, ``NodeDiedError``...)."""
    message: str
    infra: bool
    server: bool = False
    """The model server failed: restart it before the retry."""
    traceback: str = ""
    recorded_as: str = "agent_error"


def row_of(exc: BaseException, place: Place) -> Row:
    """The taxonomy row an exception raised at ``place`` falls in."""
    if place not in PLACES:
        raise ValueError(f"unknown place {place!r} (known: {', '.join(PLACES)})")
    if isinstance(exc, OSError) and exc.errno in HOST_ERRNOS:
        return Row("worker machine out of disk, memory or file handles", (OSError,), True, "infra_error")
    return next(row for row in TAXONOMY if place in row.places and row.types and isinstance(exc, row.types))


def classify(exc: BaseException, *, place: Place) -> Failure:
    """Classify an exception raised by (or around) a unit of work at ``place`` (see ``Place``)."""
    cause = exc
    if isinstance(exc, rex.RayTaskError):
        # A user exception re-raised by Ray: classify the original.
        cause = exc.cause if exc.cause is not None else exc
    tb = "".join(traceback.format_exception(type(cause), cause, cause.__traceback__))
    name = type(cause).__name__
    message = str(cause).strip().splitlines()[0][:500] if str(cause).strip() else name
    row = row_of(cause, place)
    return Failure(name, message, infra=row.infra, server=row.server, traceback=tb, recorded_as=row.recorded_as)


def deadline_failure(deadline_s: float) -> Failure:
    """The failure recorded when the driver had to kill a unit past its deadline."""
    return Failure(RolloutDeadline.__name__, f"past its hard deadline of {deadline_s:.0f}s; killed", infra=True)


BACKOFF_CAP_S = 60.0


@dataclass
class RetryBudget:
    """Infra retries per unit: ``retries`` more attempts after the first, the k-th after ``backoff_s * 2**(k-1)``."""

    retries: int
    backoff_s: float = 0.0

    def allows(self, attempt: int) -> bool:
        """True when a unit that failed on attempt ``attempt`` may run again."""
        return attempt <= self.retries

    def delay(self, attempt: int) -> float:
        """Seconds to wait before running again a unit that failed on attempt ``attempt``."""
        return min(self.backoff_s * 2 ** max(attempt - 1, 0), BACKOFF_CAP_S) if self.backoff_s > 0 else 0.0
