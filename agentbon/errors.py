"""One root exception; subclasses that are also builtins where a builtin fits (``...Timeout`` is a ``TimeoutError``).

Infrastructure failures (``InfraError`` and its subclasses) are retried within a bound and reported
apart; they are never counted as model failures. Everything else that escapes a rollout is the
model's or the agent's fault and is never retried.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

EXIT_OK, EXIT_INPUT, EXIT_INFRA_LEFT, EXIT_INTERRUPTED = 0, 2, 3, 130
"""Exit codes of ``run`` and ``eval`` (docs/failure-taxonomy.md)."""


class AgentbonError(Exception):
    """Root of every error agentbon raises."""


class ConfigError(AgentbonError, ValueError):
    """A config file or ``-c key=value`` override is wrong; the message names the key."""


class TaskError(AgentbonError, ValueError):
    """A task file is malformed; the message names the file, the field and the problem."""

    def __init__(self, source: str, field: str, problem: str):
        super().__init__(f"{source}: {field}: {problem}")
        self.source, self.field, self.problem = source, field, problem

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:  # crosses Ray from a worker intact
        return type(self), (self.source, self.field, self.problem)


class InfraError(AgentbonError):
    """Infrastructure failed (not the model): retried within a bound, reported as ``infra_error``."""


class SandboxGone(InfraError):
    """The sandbox (container, process tree) no longer exists."""


class SandboxSetupTimeout(InfraError, TimeoutError):
    """Starting a sandbox or preparing its repository ran past its deadline."""


class EngineUnavailable(InfraError, ConnectionError):
    """The Docker engine cannot be reached."""


class ImageBuildError(InfraError):
    """A base or task image could not be built."""


class PatchError(AgentbonError):
    """The sandbox's changes cannot be taken as a patch (the agent broke the repository, or the patch is huge)."""


class SandboxDiskLimit(AgentbonError):
    """A sandbox wrote more than ``sandbox.disk_limit`` and was stopped: what ran in it did that, so it is a model
    outcome, not infrastructure (docs/failure-taxonomy.md)."""


class ServerFailure(InfraError, ConnectionError):
    """The model server is down or its engine is dead (connection refused, HTTP 500 from a dead engine)."""


class EndpointMisconfigured(InfraError):
    """The endpoint refuses every request for a reason no retry fixes (unknown model name, authentication)."""


class AgentMisconfigured(InfraError):
    """The agent's own configuration cannot run (a mini-swe-agent template naming a variable it is not given): no
    fault of the model's, so never counted against it."""


class ProxyFailure(InfraError):
    """A command agent's way to the model failed: its model proxy, or the forwarder in its sandbox (no ``python3``
    there, no loopback): no fault of the program's nor the model's."""


class ModelTimeout(InfraError, TimeoutError):
    """The model server is alive (it answers a probe) but did not answer a request in time: it is overloaded, not
    dead. The rollout is retried like any infrastructure failure; the server is kept (a restart would throw away
    every request in flight and, for vLLM, minutes of warm-up)."""


class StartFailure(InfraError):
    """A part a command starts or joins (Ray, the model server, the vLLM engines) did not come up, so nothing ran.
    Its message is one line naming the part, the cause and the fix; the CLI prints it and exits 3: fix the cause and
    run the same command (docs/failure-taxonomy.md, "Exit codes")."""

    def __init__(self, part: str, cause: str, fix: str):
        super().__init__(f"{part} did not start: {cause}. Fix: {fix}; then run the same command")
        self.part, self.cause, self.fix = part, cause, fix

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:
        return type(self), (self.part, self.cause, self.fix)

    @classmethod
    def of(cls, part: str, error: BaseException, fix: str) -> StartFailure:
        """The failure ``error`` caused, its message made one line: its first line and, where it has more (a log's
        tail), its last one, which says what went wrong at the end."""
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        said = " ... ".join(lines[:1] + lines[-1:] if len(lines) > 1 else lines) or "no message"
        return cls(part, f"{type(error).__name__}: {said}", fix)


@contextmanager
def starting(describe: Callable[[], tuple[str, str]]) -> Iterator[None]:
    """Around the start of a part: what it raises becomes a ``StartFailure`` with the part and the fix ``describe()``
    names (asked then, when a log's path is known). A ``ConfigError`` passes (bad input: exit 2), and so does a
    ``StartFailure`` already made."""
    try:
        yield
    except (ConfigError, StartFailure):
        raise
    except Exception as e:
        part, fix = describe()
        raise StartFailure.of(part, e, fix) from e


class RolloutDeadline(InfraError, TimeoutError):
    """A rollout exceeded its hard deadline over its whole life."""


class ModelError(AgentbonError):
    """The model answered, but not usably (a bad request the server rejects, an empty choice)."""


class ContextLengthExceeded(ModelError):
    """The conversation no longer fits the model's context window (the server rejected it as too long)."""


class MissingExtra(AgentbonError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it."""

    def __init__(self, module: str, extra: str):
        super().__init__(f"{module} is not installed: pip install 'agentbon[{extra}]'")
        self.module, self.extra = module, extra

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return type(self), (self.module, self.extra)


class ExportError(AgentbonError, ValueError):
    """An export cannot be made as asked (unknown selector, no target repository, a patch that does not apply)."""
