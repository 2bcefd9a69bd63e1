"""The Docker engine: connecting to it, and mapping its failures onto agentbon's errors."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import docker
import requests

from agentbon.errors import EngineUnavailable, SandboxGone
from agentbon.sandbox.common import label_filters

ENGINE_HINT = "start dockerd (.ci/setup-docker.sh does), or run with -c sandbox.backend=process (weaker isolation)"


def docker_client(timeout: float = 120.0) -> docker.DockerClient:
    """A client for the engine named by the environment (``DOCKER_HOST`` or the local socket), checked with a ping."""
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except (docker.errors.DockerException, requests.RequestException, OSError) as e:
        raise EngineUnavailable(f"the Docker engine cannot be reached ({e}): {ENGINE_HINT}") from e
    return client


@contextlib.contextmanager
def engine_errors(what: str = "") -> Iterator[None]:
    """Connection failures become ``EngineUnavailable``; API errors pass through for the caller to judge."""
    try:
        yield
    except docker.errors.APIError:
        raise
    except (requests.ConnectionError, requests.Timeout, docker.errors.DockerException) as e:
        raise EngineUnavailable(f"the Docker engine failed{' during ' + what if what else ''}: {e}") from e


def gone_or_raise(error: docker.errors.APIError, what: str) -> SandboxGone:
    """The ``SandboxGone`` to raise for a missing or stopped container (re-raises any other API error)."""
    status = getattr(error.response, "status_code", None)
    explanation = str(getattr(error, "explanation", "") or error)
    if status == 404 or (status == 409 and "not running" in explanation) or "is not running" in explanation:
        return SandboxGone(f"{what}: {explanation}")
    raise error


def reap_containers(client: docker.DockerClient, labels: dict[str, str] | None = None) -> int:
    """Remove (force) every agentbon container carrying the labels; return how many went."""
    removed = 0
    with engine_errors("reap"):
        for container in client.containers.list(all=True, filters={"label": label_filters(labels)}):
            try:
                container.remove(force=True, v=True)
                removed += 1
            except docker.errors.NotFound:
                continue  # removed by someone else meanwhile
            except docker.errors.APIError as e:
                if "already in progress" not in str(e):
                    raise
    return removed
