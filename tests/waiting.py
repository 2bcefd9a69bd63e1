"""Waiting on a condition instead of sleeping a fixed time: a loaded machine gets as long as it needs."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(check: Callable[[], bool], timeout_s: float = 60.0, every_s: float = 0.05) -> bool:
    """Poll ``check`` until it is true (returns True) or ``timeout_s`` passes (returns False)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if check():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(every_s)
