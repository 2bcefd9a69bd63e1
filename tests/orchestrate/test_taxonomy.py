"""The failure taxonomy: one test per row of docs/failure-taxonomy.md, and the doc and the code agree."""

from __future__ import annotations

import errno
import subprocess
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
from agentbon.orchestrate.faults import OUTSIDE_AGENT, PLACES, TAXONOMY, classify

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
    failure = classify(exc, place="agent")
    assert (failure.infra, failure.recorded_as, failure.kind) == (infra, recorded_as, type(exc).__name__)


OUTSIDE: list[BaseException] = [
    PermissionError(errno.EACCES, "Permission denied", "/cache/agentbon/mirrors"),
    ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
    OSError(errno.EROFS, "Read-only file system", "/tmp/agentbon-sandbox"),
    subprocess.CalledProcessError(128, ["git", "clone", "-q", "/suite/repo", "/tmp/x"], stderr=b"fatal: not a repo"),
    FileNotFoundError(errno.ENOENT, "No such file or directory", "/suite/repo"),
    ValueError("a bug in the backend"),
    RuntimeError("model client cannot be built"),
]


@pytest.mark.parametrize("place", OUTSIDE_AGENT)
@pytest.mark.parametrize("exc", OUTSIDE, ids=[type(e).__name__ for e in OUTSIDE])
def test_an_exception_outside_the_agent_loop_is_infrastructure(exc: BaseException, place: str) -> None:
    """Preparation, model construction, sandbox open, taking the patch, closing, verification and selection are not
    the model's doing: what no row names there is infrastructure (retried, left out of n), never `agent_error`."""
    failure = classify(exc, place=place)  # type: ignore[arg-type]
    assert (failure.infra, failure.recorded_as, failure.kind) == (True, "infra_error", type(exc).__name__)


@pytest.mark.parametrize("exc", OUTSIDE, ids=[type(e).__name__ for e in OUTSIDE])
def test_the_model_failure_default_covers_only_the_agent_loop(exc: BaseException) -> None:
    assert (classify(exc, place="agent").infra, classify(exc, place="agent").recorded_as) == (False, "agent_error")


@pytest.mark.parametrize(("exc", "place", "infra"), [
    (PatchError("patch of 80 MB"), "diff", False),  # taking the patch: the agent made it too large
    (SandboxDiskLimit("wrote 10g"), "diff", False),
    (ContextLengthExceeded("candidates too long for the judge"), "select", False),  # the critic's own outcome
    (ModelError("judge answered nothing"), "select", False),
    (ServerFailure("judge server down"), "select", True),
    (ModelTimeout("judge timed out"), "select", True),
    (EndpointMisconfigured("judge model unknown (HTTP 404)"), "select", True),
    (ModelError("client refused its settings"), "model", True),  # no model call has happened yet
    (PatchError("cannot diff"), "prepare", True),
    (OSError(errno.ENOSPC, "No space left on device"), "agent", True),  # the machine, wherever it happens
])  # fmt: skip
def test_rows_that_name_their_places_decide_there(exc: BaseException, place: str, infra: bool) -> None:
    assert classify(exc, place=place).infra is infra  # type: ignore[arg-type]


def test_an_unknown_place_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown place 'agnet'"):
        classify(ValueError("x"), place="agnet")  # type: ignore[arg-type]


def test_a_server_failure_restarts_the_server_and_nothing_else_does() -> None:
    assert classify(ServerFailure("down"), place="agent").server
    assert not any(classify(e, place="agent").server for e, *_ in ROWS if not isinstance(e, ServerFailure))


def test_ray_wrapped_exceptions_are_classified_by_their_cause() -> None:
    try:
        raise SandboxGone("killed")
    except SandboxGone as e:
        wrapped = rex.RayTaskError("run_rollout", "tb", e)
    assert classify(wrapped, place="agent").infra and classify(wrapped, place="agent").kind == "SandboxGone"


def test_every_row_of_the_code_is_a_row_of_the_doc_and_the_reverse() -> None:
    table = [line for line in DOC.read_text().splitlines() if line.startswith("| ") and " | infra | " in line
             or line.startswith("| ") and " | model | " in line]
    sources = [line.split(" | ")[0].removeprefix("| ") for line in table]
    assert sources == [row.source for row in TAXONOMY]
    for line, row in zip(table, TAXONOMY, strict=True):
        outcome = line.split(" | ")[2]
        assert outcome == ("infra" if row.infra else "model") and f"`{row.recorded_as}`" in line
        where = line.rstrip(" |").split(" | ")[-1]
        if row.places == PLACES:
            assert where == "anywhere"
        elif row.places == OUTSIDE_AGENT:
            assert where == "every place but `agent`"
        else:
            assert where == ", ".join(f"`{place}`" for place in row.places)


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
        assert type(back) is cls and str(back) == str(exc)
        assert classify(back, place="agent").infra == classify(exc, place="agent").infra
