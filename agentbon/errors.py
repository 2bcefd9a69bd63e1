"""One root exception; subclasses that are also builtins where a builtin fits (``...Timeout`` is a ``TimeoutError``).

Infrastructure failures (``InfraError`` and its subclasses) are retried within a bound and reported
apart; they are never counted as model failures. Everything else that escapes a rollout is the
model's or the agent's fault and is never retried.
"""

from __future__ import annotations


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


class ModelTimeout(InfraError, TimeoutError):
    """The model server is alive (it answers a probe) but did not answer a request in time: it is overloaded, not
    dead. The rollout is retried like any infrastructure failure; the server is kept (a restart would throw away
    every request in flight and, for vLLM, minutes of warm-up)."""


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
