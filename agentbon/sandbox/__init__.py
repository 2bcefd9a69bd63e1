"""Sandboxes: where rollouts and verifications run.

Docker containers from per-task images by default; a process backend (temp-dir clone + host processes, weaker
isolation) where no engine exists. Both satisfy ``protocols.Sandbox`` / ``protocols.SandboxBackend``.
"""

from __future__ import annotations

import logging

from agentbon.config import SandboxConfig
from agentbon.errors import EngineUnavailable
from agentbon.protocols import SandboxBackend
from agentbon.sandbox.base import ensure_base_image
from agentbon.sandbox.docker import DockerBackend, DockerSandbox
from agentbon.sandbox.engine import docker_client
from agentbon.sandbox.process import ProcessBackend, ProcessSandbox
from agentbon.sandbox.reaper import reap

log = logging.getLogger(__name__)

__all__ = [
    "DockerBackend",
    "DockerSandbox",
    "ProcessBackend",
    "ProcessSandbox",
    "docker_client",
    "ensure_base_image",
    "make_backend",
    "reap",
]


def make_backend(config: SandboxConfig | None = None, allow_fallback: bool = False) -> SandboxBackend:
    """The configured backend: docker (checked now), or process when asked for, or when docker is unreachable
    and ``allow_fallback`` is set (logged as a warning: the isolation is weaker)."""
    config = config or SandboxConfig()
    if config.backend == "process":
        return ProcessBackend(config)
    try:
        client = docker_client(timeout=max(config.setup_timeout_s, 30.0))
    except EngineUnavailable as e:
        if not allow_fallback:
            raise
        log.warning("%s; falling back to the process backend (weaker isolation)", e)
        return ProcessBackend(config)
    return DockerBackend(config, client)
