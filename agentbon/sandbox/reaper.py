"""Removing leftover sandboxes by label: at the start and end of a run, at interpreter exit, and on demand."""

from __future__ import annotations

import atexit
import logging

from agentbon.errors import AgentbonError, EngineUnavailable
from agentbon.protocols import SandboxBackend
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


class Reaper:
    """Removes a run's leftovers on entry, on exit, and at interpreter exit should the block never finish.

    ``with Reaper(backend, {"run_id": run_id}):`` keeps a crashed earlier attempt's containers from piling up,
    and makes sure this one's are gone when it ends, however it ends short of SIGKILL.
    """

    def __init__(self, backend: SandboxBackend, labels: dict[str, str] | None = None):
        self.backend, self.labels = backend, dict(labels or {})
        self.removed = 0

    def sweep(self) -> int:
        """Remove matching sandboxes now; failures are logged, never raised (this runs during shutdown)."""
        try:
            count = self.backend.reap(self.labels)
        except AgentbonError as e:
            log.warning("could not remove leftover sandboxes (%s): run `agentbon cleanup`", e)
            return 0
        if count:
            log.info("removed %d leftover sandbox(es) matching %s", count, self.labels or "agentbon=1")
        self.removed += count
        return count

    def __enter__(self) -> Reaper:
        self.sweep()
        atexit.register(self.sweep)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.sweep()
        finally:
            atexit.unregister(self.sweep)
