"""The Docker engine: connecting to it, and mapping its failures onto agentbon's errors."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator
from typing import Any

import docker
import requests

from agentbon.errors import EngineUnavailable, SandboxGone
from agentbon.sandbox.common import channel_folder, label_filters

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
    """Remove (force) every agentbon container carrying the labels, and its channel folder; return how many went.

    A sandbox removes its own channel folder when it closes; a container removed here (a warm one nobody took, a
    dead unit's) never closed, so its folder goes with it."""
    removed = 0
    with engine_errors("reap"):
        # The list call's own summaries, not ``containers.list()``: that inspects each container after listing, and
        # one removed in between (a closed sandbox's background removal, sandbox/removal.py) failed the whole reap.
        for summary in client.api.containers(all=True, filters={"label": label_filters(labels)}):
            try:
                client.api.remove_container(summary["Id"], force=True, v=True)
                removed += 1
                folder = channel_folder(summary.get("Mounts"))
                if folder is not None:
                    shutil.rmtree(folder, ignore_errors=True)
            except docker.errors.NotFound:
                continue  # removed by someone else meanwhile
            except docker.errors.APIError as e:
                if "already in progress" not in str(e):
                    raise
    return removed


LOCAL_HELPERS = ("create_host_config", "create_networking_config", "create_endpoint_config", "create_ipam_config",
                 "create_ipam_pool")
"""``APIClient`` methods that build a request body locally: not engine calls."""


class EngineMeter:
    """Engine API calls by method, and the seconds they took (one per sandbox: ``SandboxUse.engine_calls``)."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.seconds = 0.0

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def add(self, method: str, seconds: float) -> None:
        self.calls[method] = self.calls.get(method, 0) + 1
        self.seconds += seconds


class MeteredAPI:
    """An ``APIClient`` whose engine calls are counted into ``meter``."""

    def __init__(self, api: Any, meter: EngineMeter):
        self._api, self.meter = api, meter

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._api, name)
        if name.startswith("_") or name in LOCAL_HELPERS or not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            try:
                return attr(*args, **kwargs)
            finally:
                self.meter.add(name, time.monotonic() - started)

        return call
