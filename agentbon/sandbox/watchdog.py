"""The disk watchdog: where the engine has no per-container quota, measure a container's writable layer and stop
the container past its limit (docs/security.md, "Sandbox hardening")."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import docker
import requests

log = logging.getLogger(__name__)

QUOTA_UNSUPPORTED = ("storage-opt", "storage opt", "quota")
"""Words of the engine's refusal of ``storage_opt`` (overlay2 needs xfs with pquota; vfs and others have none)."""


def quota_refused(error: docker.errors.APIError) -> bool:
    """True when the engine refused a container because it cannot enforce ``storage_opt={"size": ...}``."""
    text = str(getattr(error, "explanation", "") or error).lower()
    return any(word in text for word in QUOTA_UNSUPPORTED)


def layer_size(api: docker.APIClient, container_id: str) -> int | None:
    """Bytes in the container's writable layer (the engine walks it: ``SizeRw``); None when it is gone."""
    try:
        response = api._get(api._url("/containers/{0}/json", container_id), params={"size": 1})
        return int(api._result(response, json=True).get("SizeRw") or 0)
    except (docker.errors.APIError, requests.RequestException):
        return None


def over_limit(size: int | None, limit: int) -> bool:
    """The decision, apart from the measuring."""
    return size is not None and size > limit


class DiskWatchdog:
    """A thread that measures one container's writable layer every ``interval_s`` and calls ``on_over(size)`` once
    when it passes ``limit`` bytes; it ends then, when the container is gone, or on ``stop()``."""

    def __init__(
        self,
        api: docker.APIClient,
        container_id: str,
        limit: int,
        interval_s: float,
        on_over: Callable[[int], None],
    ):
        self.api, self.cid, self.limit, self.interval_s, self.on_over = api, container_id, limit, interval_s, on_over
        self.tripped: int | None = None
        """The size that was measured over the limit, once it was."""
        self.checks = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"disk-{container_id[:8]}", daemon=True)

    def start(self) -> DiskWatchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the thread (it may be inside one measurement: that one finishes on its own)."""
        self._stop.set()

    def wait(self, timeout: float | None = None) -> None:
        """Wait until the thread has ended (after a stop it called for, the container is gone)."""
        self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            size = layer_size(self.api, self.cid)
            self.checks += 1
            if size is None:
                return
            if over_limit(size, self.limit) and not self._stop.is_set():
                self.tripped = size
                try:
                    self.on_over(size)
                except Exception as e:  # noqa: BLE001 - a thread must not die silently; the sandbox's next call tells
                    log.warning("disk watchdog of %s could not stop it: %s", self.cid[:12], e)
                return
