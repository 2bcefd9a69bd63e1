"""Removing leftover sandboxes of both backends by label (``agentbon cleanup``)."""

from __future__ import annotations

import logging

from agentbon.errors import EngineUnavailable
from agentbon.sandbox.engine import docker_client, reap_containers
from agentbon.sandbox.process import reap_process_sandboxes

log = logging.getLogger(__name__)


def reap(labels: dict[str, str] | None = None) -> int:
    """Remove agentbon sandboxes of both backends matching the labels (all when none); return how many.

    Keys may be bare (``run_id``) or prefixed (``agentbon.run_id``). An unreachable engine only skips containers.
    """
    removed = reap_process_sandboxes(labels)
    try:
        client = docker_client(timeout=30.0)
    except EngineUnavailable as e:
        log.info("reap: skipping containers: %s", e)
        return removed
    return removed + reap_containers(client, labels)
