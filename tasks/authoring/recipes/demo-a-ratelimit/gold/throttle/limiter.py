"""Per-key rate limiting on top of sliding windows."""

from __future__ import annotations

from dataclasses import dataclass

from throttle.clock import Clock, MonotonicClock
from throttle.policy import Rate, parse_rate
from throttle.window import SlidingWindow


@dataclass(frozen=True)
class Decision:
    allowed: bool
    remaining: int
    """Requests still allowed in the current window after this one."""
    retry_after: float
    """Seconds to wait before retrying (0.0 when allowed)."""


class RateLimiter:
    """At most ``rate.limit`` requests per key (user, IP address, API token) in any ``rate.period`` seconds."""

    def __init__(self, rate: str | Rate, clock: Clock | None = None) -> None:
        self.rate = parse_rate(rate) if isinstance(rate, str) else rate
        self.clock = clock or MonotonicClock()
        self._windows: dict[str, SlidingWindow] = {}

    def check(self, key: str) -> Decision:
        """Count a request for ``key`` now, if it is allowed, and say so."""
        now = self.clock.now()
        window = self._windows.get(key)
        if window is None:
            window = self._windows[key] = SlidingWindow(self.rate.limit, self.rate.period)
        allowed = window.hit(now)
        return Decision(allowed, window.remaining(now), 0.0 if allowed else window.retry_after(now))

    def reset(self, key: str) -> None:
        """Forget every request of ``key``."""
        self._windows.pop(key, None)

    def forget_idle(self) -> int:
        """Drop the windows of keys with no request that still counts; how many were dropped.

        Call it now and then: without it a long-running service keeps one window per client forever.
        """
        now = self.clock.now()
        idle = [key for key, window in self._windows.items() if window.count(now) == 0]
        for key in idle:
            del self._windows[key]
        return len(idle)

    def __len__(self) -> int:
        """Keys with a window."""
        return len(self._windows)
