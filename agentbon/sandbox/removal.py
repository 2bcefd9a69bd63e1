"""Removing closed sandboxes off the unit's path (docs/sandboxes.md, "Removal after the unit").

Removing a container costs the engine a kill and a layer deletion, a few tenths of a second that a unit of work
would otherwise wait for after its result is known. Where the run ends with a reap by its label (the same callers
that keep sandboxes warm), ``close`` hands the container to this process's remover instead: one thread, one queue.
A container waiting here belongs to a closed sandbox, so nothing else uses it; should the process die first, the
run's reap (or ``agentbon cleanup``) removes it, as it does any labelled container.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Any

import docker
import requests

log = logging.getLogger(__name__)


class Remover:
    """Removes containers in a background thread, in the order they were closed."""

    def __init__(self, api: Any):
        self._api = api
        self._queue: deque[tuple[str, str]] = deque()
        self._cond = threading.Condition()
        self._busy = 0
        self._thread: threading.Thread | None = None
        self.removed = 0
        """Containers this remover has dealt with (removed, found gone, or failed and logged for the reap)."""

    def put(self, container_id: str, name: str) -> None:
        """Queue a closed sandbox's container for removal."""
        with self._cond:
            self._queue.append((container_id, name))
            self._busy += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="agentbon-remover", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued container is removed; False when ``timeout`` passed first."""
        with self._cond:
            return self._cond.wait_for(lambda: self._busy == 0, timeout)

    @property
    def pending(self) -> int:
        with self._cond:
            return self._busy

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._queue))
                container_id, name = self._queue.popleft()
            try:
                remove(self._api, container_id, name)
            finally:
                with self._cond:
                    self._busy -= 1
                    self.removed += 1
                    self._cond.notify_all()


def remove(api: Any, container_id: str, name: str) -> None:
    """Kill and remove one container; gone already is fine, a failure is logged (the run's reap is the backstop)."""
    try:
        api.remove_container(container_id, force=True, v=True)  # no stop first: kill and remove
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as e:
        if "already in progress" not in str(e):
            log.warning("could not remove sandbox %s: %s (agentbon cleanup removes it)", name, e)
    except requests.RequestException as e:
        log.warning("could not remove sandbox %s: %s (agentbon cleanup removes it)", name, e)
