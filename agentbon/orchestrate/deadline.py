"""The in-worker half of a rollout's hard deadline (the driver's ``ray.cancel(force=True)`` is the other).

At the deadline the watchdog closes the sandbox (so the agent's next command raises ``SandboxGone``)
and raises ``RolloutDeadline`` asynchronously in the worker thread (so Python code that never touches
the sandbox, e.g. a loop around the model, stops too). A thread blocked in C (a socket read) only
sees it when the call returns; the driver's forced cancel covers that case.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from agentbon.errors import RolloutDeadline


class Watchdog:
    """Fires once at ``deadline_s`` unless disarmed first; use as a context manager around the guarded work."""

    def __init__(self, deadline_s: float):
        self.deadline_s = deadline_s
        self.fired = False
        self._lock = threading.Lock()
        self._armed = False
        self._thread_id = threading.get_ident()
        self._sandbox: Any = None
        self._timer = threading.Timer(max(deadline_s, 0.0), self._fire)
        self._timer.daemon = True

    def guard(self, sandbox: Any) -> None:
        """Close this sandbox when the deadline passes."""
        with self._lock:
            self._sandbox = sandbox
            fired = self.fired
        if fired:
            self._close(sandbox)

    def _close(self, sandbox: Any) -> None:
        try:
            sandbox.close()
        except Exception:  # the sandbox may already be gone; the driver's reaper is the backstop
            pass

    def _fire(self) -> None:
        with self._lock:
            if not self._armed:
                return
            self.fired = True
            sandbox = self._sandbox
        if sandbox is not None:
            self._close(sandbox)
        with self._lock:
            # Under the lock: once disarm() has returned, no exception can be injected any more.
            if self._armed:
                self._armed = False
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(self._thread_id), ctypes.py_object(RolloutDeadline)
                )

    def __enter__(self) -> Watchdog:
        self._armed = True
        self._timer.start()
        return self

    def disarm(self) -> None:
        """Stop the watchdog; after this it never fires."""
        with self._lock:
            self._armed = False
        self._timer.cancel()

    def __exit__(self, *exc: object) -> None:
        self.disarm()
