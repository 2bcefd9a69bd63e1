"""Sliding-window rate limiting."""

from throttle.clock import ManualClock, MonotonicClock
from throttle.limiter import Decision, RateLimiter
from throttle.window import SlidingWindow

__all__ = ["Decision", "ManualClock", "MonotonicClock", "RateLimiter", "SlidingWindow"]
