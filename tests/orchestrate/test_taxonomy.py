"""The failure taxonomy: one test per row of docs/failure-taxonomy.md, and the doc and the code agree."""

from __future__ import annotations

import errno
from pathlib import Path

import docker.errors
import pytest
import requests
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
from agentbon.orchestrate.faults import TAXONOMY, classify

DOC = Path(__file__).parents[2] / "docs" / "failure-taxonomy.md"

ROWS: list[tuple[BaseException, bool, str]] = [
    (SandboxGone("container killed"), True, "infra_error"),
    (SandboxSetupTimeout("slow start"), True, "infra_error"),
    (EngineUnavailable("no engine"), True, "infra_error"),
    (ImageBuildError("no image"), True, "infra_error"),
    (TaskError("suite/t/repo.bundle", "repo.url", "no such file or directory"), True, "infra_error"),
    (docker.errors.APIError("500 Server Error: no space left on device"), True, "infra_error"),
    (docker.errors.ImageNotFound("no such image"), True, "infra_error"),
    (docker.errors.NotFound("network bridgee not found"), True, "infra_error"),
    (requests.ConnectionError("engine socket closed"), True, "infra_error"),
    (ServerFailure("connection refused"), True, "infra_error"),
    (ModelTimeout("no answer in 600s"), True, "infra_error"),
    (EndpointMisconfigured("model 'x' does not exist (HTTP 404)"), True, "infra_error"),
    (RolloutDeadline("past 1800s"), True, "infra_error"),
    (InfraError("something of ours"), True, "infra_error"),
    (rex.WorkerCrashedError(), True, "infra_error"),
    (KeyboardInterrupt(), True, "infra_error"),
    (MemoryError(), True, "infra_error"),
    (OSError(errno.ENOSPC, "No space left on device"), True, "infra_error"),
    (ContextLengthExceeded("too long"), False, "token_limit"),
    (ModelError("empty choice"), False, "agent_error"),
    (PatchError("repository broken"), False, "agent_error"),
    (SandboxDiskLimit("wrote 10g"), False, "agent_error"),
    (ValueError("agent bug"), False, "agent_error"),
    (OSError(errno.ENOENT, "No such file"), False, "agent_error"),
]


@pytest.mark.parametrize(("exc", "infra", "recorded_as"), ROWS, ids=[f"{type(e).__name__}-{i}" for i, (e, *_) in enumerate(ROWS)])
def test_each_failure_source_is_classified_once(exc: BaseException, infra: bool, recorded_as: str) -> None:
    failure = classify(exc)
    assert (failure.infra, failure.recorded_as, failure.kind) == (infra, recorded_as, type(exc).__name__)


def test_a_server_failure_restarts_the_server_and_nothing_else_does() -> None:
    assert classify(ServerFailure("down")).server
    assert not any(classify(e).server for e, *_ in ROWS if not isinstance(e, ServerFailure))


def test_ray_wrapped_exceptions_are_classified_by_their_cause() -> None:
    try:
        raise SandboxGone("killed")
    except SandboxGone as e:
        wrapped = rex.RayTaskError("run_rollout", "tb", e)
    assert classify(wrapped).infra and classify(wrapped).kind == "SandboxGone"


def test_every_row_of_the_code_is_a_row_of_the_doc_and_the_reverse() -> None:
    table = [line for line in DOC.read_text().splitlines() if line.startswith("| ") and " | infra | " in line
             or line.startswith("| ") and " | model | " in line]
    sources = [line.split(" | ")[0].removeprefix("| ") for line in table]
    assert sources == [row.source for row in TAXONOMY]
    for line, row in zip(table, TAXONOMY, strict=True):
        outcome = line.split(" | ")[2]
        assert outcome == ("infra" if row.infra else "model") and f"`{row.recorded_as}`" in line


def test_every_agentbon_error_crosses_from_a_worker_intact() -> None:
    """Ray pickles a unit's exception back to the driver: one that cannot be rebuilt arrives as a deserialisation
    error, which the taxonomy cannot place (a missing repository would read as the model's failure)."""
    import inspect
    import pickle

    import agentbon.errors as errors

    classes = [c for c in vars(errors).values() if inspect.isclass(c) and issubclass(c, errors.AgentbonError)]
    assert errors.TaskError in classes and errors.MissingExtra in classes
    for cls in classes:
        named = [
            p for p in inspect.signature(cls.__init__).parameters.values()
            if p.name != "self" and p.kind is p.POSITIONAL_OR_KEYWORD
        ]  # fmt: skip
        exc = cls(*[f"arg{i}" for i in range(len(named))]) if named else cls("message")
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is cls and str(back) == str(exc) and classify(back).infra == classify(exc).infra
