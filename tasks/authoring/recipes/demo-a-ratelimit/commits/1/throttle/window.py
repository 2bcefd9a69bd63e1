"""A sliding-window counter: at most ``limit`` hits in any ``period`` seconds."""

from __future__ import annotations

from collections import deque


class SlidingWindow:
    """The hits of the last ``period`` seconds.

    A hit made at time ``t`` counts against the limit until ``t + period``, and no longer: from
    ``t + period`` on, the window has room for a new hit again.
    """

    def __init__(self, limit: int, period: float) -> None:
        if limit < 1 or period <= 0:
            raise ValueError("limit must be at least 1 and period positive")
        self.limit = limit
        self.period = period
        self._hits: deque[float] = deque()

    def _expire(self, now: float) -> None:
        horizon = now - self.period
        while self._hits and self._hits[0] <= horizon:
            self._hits.popleft()

    def count(self, now: float) -> int:
        """Hits that still count at ``now``."""
        self._expire(now)
        return len(self._hits)

    def remaining(self, now: float) -> int:
        return max(0, self.limit - self.count(now))

    def hit(self, now: float) -> bool:
        """Record a hit at ``now`` if there is room; False (nothing recorded) when the window is full."""
        if self._hits and now < self._hits[-1]:
            raise ValueError("hits must be recorded in time order")
        if self.count(now) >= self.limit:
            return False
        self._hits.append(now)
        return True

    def retry_after(self, now: float) -> float:
        """Seconds until a hit would be allowed; 0.0 when one is allowed now."""
        if self.count(now) < self.limit:
            return 0.0
        return self._hits[0] + self.period - now
