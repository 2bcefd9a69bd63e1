"""What a preflight check sees (``Context``) and what it reports (``Problem``, ``PreflightError``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cached_property
from typing import Any

from pydantic import BaseModel

from agentbon.config import ModelConfig, RunConfig
from agentbon.errors import ConfigError
from agentbon.types import Task

ENGINE_TIMEOUT_S = 5.0
"""How long the preflight waits on the Docker engine (ping, info, lookups) before calling it unreachable."""


REAL_FACTORIES = {
    "backend": "agentbon.orchestrate.factories.default_backend",
    "model": "agentbon.orchestrate.factories.default_model",
    "server": "agentbon.models.service.ModelService",
    "verifier": "agentbon.orchestrate.factories.default_verifier",
}
"""agentbon's own factories, by qualified name; a ``Factories`` field holding another is a test's fake."""


class Problem(BaseModel):
    """One failed check: what is wrong and how to fix it. A warning (``fatal=False``) does not stop the run."""

    check: str
    """The check's name (``engine``, ``network``, ``images``, ``disk``, ``limits``, ``extras``, ``endpoint``)."""
    cause: str
    """What is wrong, naming the config key, image, path or address."""
    fix: str
    """What to do about it: a command or a ``-c key=value``."""
    fatal: bool = True
    """False: a warning (the run would still work, only slower or later)."""

    def __str__(self) -> str:
        return f"[{self.check}] {self.cause}\n    fix: {self.fix}"


class PreflightError(ConfigError):
    """One or more preflight checks failed; the message lists every problem with its fix. Nothing was recorded."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(
            f"preflight failed ({len(problems)} problem{'s' * (len(problems) != 1)}), nothing recorded:\n{lines}"
        )


class Context:
    """The run as the checks see it: config, tasks, factories, and one Docker client shared by every check."""

    def __init__(self, config: RunConfig, tasks: list[Task], factories: Any = None):
        self.config, self.tasks = config, tasks
        self.factories = factories
        """The run's ``Factories``; None: the real ones."""
        self._client: Any = None
        self._info: dict[str, Any] | None = None
        self.engine_error: str | None = None
        """Why the engine cannot be reached (set by ``client()``); the ``engine`` check reports it, others skip."""
        self._cache: dict[str, Any] = {}

    @cached_property
    def model(self) -> ModelConfig:
        """The model config as it will run (``run_batch`` has resolved it: the same config back); a ``ConfigError``
        where it cannot be resolved (not cached: each check that asks says what it makes of it)."""
        from agentbon.models import resolve_model

        return resolve_model(self.config.model)

    def real(self, part: str) -> bool:
        """True where ``factories.<part>`` is agentbon's own (a test's fake needs no engine, server or extra)."""
        if self.factories is None:
            return True
        made = getattr(self.factories, part)
        # Compared by name, not identity: importing the orchestrator here would import Ray (a second or more).
        return f"{getattr(made, '__module__', '')}.{getattr(made, '__qualname__', '')}" == REAL_FACTORIES[part]

    def uses_docker(self) -> bool:
        """True where the run's sandboxes are Docker containers of the real backend."""
        return self.config.sandbox.backend == "docker" and self.real("backend")

    def client(self) -> Any:
        """The Docker client, pinged once; None (with ``engine_error`` set) where the engine does not answer."""
        if self._client is None and self.engine_error is None:
            import docker
            import requests

            try:
                client = docker.from_env(timeout=ENGINE_TIMEOUT_S)
                client.ping()
                self._client = client
            except (docker.errors.DockerException, requests.RequestException, OSError) as e:
                self.engine_error = f"{type(e).__name__}: {e}"
        return self._client

    def info(self) -> dict[str, Any]:
        """``docker info`` (cached); empty where the engine does not answer."""
        if self._info is None:
            client = self.client()
            self._info = client.info() if client is not None else {}
        return self._info

    def once(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` the first time ``key`` is asked for, the same value after (a registry probe costs seconds)."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]


def engine_address() -> str:
    """Where the Docker SDK looks for the engine (``DOCKER_HOST`` or the default socket)."""
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
