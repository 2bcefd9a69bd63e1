"""The seams: small Protocols that implementations satisfy without inheriting (docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from agentbon.types import ExecResult, Role, Rollout, RolloutSpec, Selection, Task, Usage, Verdict


@runtime_checkable
class Sandbox(Protocol):
    """A place where one rollout (or one verification) runs commands on a task's repository.

    A failed command is an ``ExecResult`` with its exit code; a sandbox that is gone raises
    ``SandboxGone``. Close it with ``close()`` or use it as a context manager.
    """

    id: str
    workdir: str
    """The repository's path inside the sandbox."""

    @property
    def isolation(self) -> str:
        """``docker``, ``docker (as root: why)`` or ``process (weaker isolation)``."""
        ...

    def exec(
        self, command: str, timeout: float | None = None, workdir: str | None = None, user: str | None = None
    ) -> ExecResult:
        """Run a shell command under ``timeout -k``; output capped.

        ``user``: None runs it as the sandbox's user (unprivileged where the backend and image allow,
        docs/security.md); ``"root"`` is for the verifier's housekeeping only.
        """
        ...

    def write_file(self, path: str, content: str | bytes) -> None:
        """Write a file (relative paths are under ``workdir``)."""
        ...

    def read_file(self, path: str) -> bytes:
        """Read a file (relative paths are under ``workdir``)."""
        ...

    def diff(self) -> str:
        """``git diff`` of the working tree against the base commit, new files included."""
        ...

    def close(self) -> None:
        """Remove the sandbox; safe to call twice."""
        ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, *exc: object) -> None: ...


class SandboxBackend(Protocol):
    """Where sandboxes come from (the deployment), apart from what they can do (the Sandbox)."""

    isolation: str

    def prepare(self, task: Task) -> str:
        """Make sure the task's environment exists (build or find the image); return its reference."""
        ...

    def open(self, task: Task, labels: dict[str, str]) -> Sandbox:
        """A new sandbox with the repository at the task's base commit."""
        ...

    def reap(self, labels: dict[str, str] | None = None) -> int:
        """Remove leftover sandboxes matching the labels (all agentbon ones by default); return how many."""
        ...


class ChatResponse(BaseModel):
    """One completion from a model."""

    content: str
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str | None = None
    latency_s: float = 0.0
    logprobs: list[dict[str, Any]] | None = None
    """Top logprobs of the first tokens where asked for and given (the critic's p(YES))."""


class Model(Protocol):
    """A chat model behind an OpenAI-compatible interface (or a fake)."""

    name: str

    def chat(self, messages: Sequence[dict[str, Any]], *, seed: int | None = None, **sampling: Any) -> ChatResponse:
        """One completion for the messages. Raises ``ServerFailure`` when the server is gone."""
        ...


class AgentResult(BaseModel):
    """What an agent hands back: the trajectory and how it ended (the patch is taken by the caller)."""

    messages: list[dict[str, Any]]
    """OpenAI chat-message format, each with an ``extra`` field (tokens, timings, exit status)."""
    status: str
    """A ``RolloutStatus``."""
    exit_status: str
    steps: int = 0
    malformed: int = 0
    unusable: str | None = None
    """An ``UnusableCause``: the rollout ended on a reply the agent could not use (None otherwise)."""
    usage: Usage = Field(default_factory=Usage)
    model_s: float = 0.0


class Agent(Protocol):
    """Drives a model in a sandbox until it submits or hits a limit."""

    def run(self, task: Task, sandbox: Sandbox, model: Model, spec: RolloutSpec) -> AgentResult: ...


class Verifier(Protocol):
    """Runs tests on a candidate patch in a fresh sandbox and says what they decided."""

    def verify(self, task: Task, rollout: Rollout, role: Role) -> Verdict: ...


class Critic(Protocol):
    """Scores a candidate where tests cannot decide (higher is better, in [0, 1])."""

    name: str

    def score(self, task: Task, rollout: Rollout, evidence: Verdict | None) -> float: ...


class Candidate(BaseModel):
    """A rollout with what is known about it at selection time."""

    rollout: Rollout
    evidence: Verdict | None = None
    grade: Verdict | None = None
    """Only the oracle selector may look at this."""
    critic_score: float | None = None


class Selector(Protocol):
    """Ranks a task's candidates and names a winner with the reason."""

    name: str
    oracle: bool

    def select(self, task: Task, candidates: Sequence[Candidate]) -> Selection: ...
