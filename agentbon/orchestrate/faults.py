"""Which failures are infrastructure (retried within a bound, reported apart) and which are the model's.

Infrastructure: every ``InfraError`` (sandbox gone, setup timeout, engine unreachable, image build,
model server down, rollout deadline) and a Ray worker or node that died under a unit of work. Anything
else that escapes a rollout is the model's or the agent's fault and is never retried (design.md §4).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass

from ray import exceptions as rex

from agentbon.errors import InfraError, RolloutDeadline, ServerFailure

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


def classify(exc: BaseException) -> Failure:
    """Classify an exception raised by (or around) a unit of work."""
    cause = exc
    if isinstance(exc, rex.RayTaskError):
        # A user exception re-raised by Ray: classify the original.
        cause = exc.cause if exc.cause is not None else exc
    tb = "".join(traceback.format_exception(type(cause), cause, cause.__traceback__))
    name = type(cause).__name__
    message = str(cause).strip().splitlines()[0][:500] if str(cause).strip() else name
    if isinstance(cause, InfraError):
        return Failure(name, message, infra=True, server=isinstance(cause, ServerFailure), traceback=tb)
    if isinstance(cause, RAY_INFRA):
        return Failure(name, message, infra=True, traceback=tb)
    return Failure(name, message, infra=False, traceback=tb)


def deadline_failure(deadline_s: float) -> Failure:
    """The failure recorded when the driver had to kill a unit past its deadline."""
    return Failure(RolloutDeadline.__name__, f"past its hard deadline of {deadline_s:.0f}s; killed", infra=True)


@dataclass
class RetryBudget:
    """Infra retries per unit: ``retries`` more attempts after the first."""

    retries: int

    def allows(self, attempt: int) -> bool:
        """True when a unit that failed on attempt ``attempt`` may run again."""
        return attempt <= self.retries
