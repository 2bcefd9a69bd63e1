"""Warm sandboxes: a container for the next rollout is started while the current one runs (docs/sandboxes.md).

One pool per sandbox backend, that is per worker process. When a sandbox is taken, a replacement of the same kind
(image and run labels, without the rollout's own) starts in a background thread, with its executor connected, and
the taking sandbox's ``close`` waits for that start to end: a unit of work never leaves a start running behind it,
so the driver's end-of-run reap, which runs after every unit ended, finds every warm container (they carry the
run's labels). A process keeps at most ``size`` waiting containers; one of another kind is removed to make room, and
those of another run are removed when a new run's first sandbox is taken.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

Key = tuple[str, tuple[tuple[str, str], ...]]
"""(image reference, the sandbox's labels without the rollout's own)."""
UNIT_LABELS = ("rollout", "rollout_id", "agentbon.rollout_id", "attempt", "agentbon.attempt")


def pool_key(image: str, labels: dict[str, str]) -> Key:
    """The kind of sandbox a warm one can stand in for: same image, same labels but the unit's."""
    return image, tuple(sorted((k, v) for k, v in labels.items() if k not in UNIT_LABELS))


def run_of(key: Key) -> str:
    return next((v for k, v in key[1] if k in ("run", "run_id", "agentbon.run_id")), "")


class WarmPool:
    """Sandboxes started ahead of need, at most ``size`` waiting in this process."""

    def __init__(self, size: int):
        self.size = size
        self._ready: list[tuple[Key, Any]] = []
        self._lock = threading.Lock()
        self._run = ""
        self.started = 0
        """Warm sandboxes started by this pool."""
        self.taken = 0
        """Of those, how many a rollout or verification took."""

    def take(self, key: Key) -> Any | None:
        """A waiting sandbox of this kind that is still ready, else None; other runs' waiting sandboxes go."""
        stale: list[Any] = []
        found = None
        with self._lock:
            run = run_of(key)
            if run != self._run:
                stale += [sandbox for _, sandbox in self._ready]
                self._ready.clear()
                self._run = run
            for i, (k, sandbox) in enumerate(self._ready):
                if k == key:
                    del self._ready[i]
                    found = sandbox
                    break
        for sandbox in stale:
            sandbox.close()
        if found is not None and not found.ready():
            found.close()  # removed meanwhile (a reap, the engine restarted): start one the usual way
            return None
        if found is not None:
            self.taken += 1
        return found

    def fill(self, key: Key, start: Callable[[], Any]) -> threading.Thread | None:
        """Start one sandbox of this kind in the background (None when the pool is off); join the thread returned
        before the unit that asked ends."""
        if self.size <= 0:
            return None

        def work() -> None:
            try:
                sandbox = start()
            except Exception as e:  # noqa: BLE001 - a warm start that fails costs nothing: the next open starts one
                log.info("warm sandbox for %s did not start: %s", key[0], e)
                return
            evicted: list[Any] = []
            with self._lock:
                self.started += 1
                if run_of(key) != self._run:
                    evicted.append(sandbox)  # the run changed while it started
                else:
                    self._ready.append((key, sandbox))
                    while len(self._ready) > self.size:
                        evicted.append(self._ready.pop(0)[1])
            for old in evicted:
                old.close()

        thread = threading.Thread(target=work, name="agentbon-warm", daemon=True)
        thread.start()
        return thread

    def drain(self) -> None:
        """Remove every waiting sandbox."""
        with self._lock:
            waiting = [sandbox for _, sandbox in self._ready]
            self._ready.clear()
        for sandbox in waiting:
            sandbox.close()
