"""Sliding-window rate limiting."""

from throttle.clock import ManualClock, MonotonicClock
from throttle.limiter import Decision, RateLimiter
from throttle.policy import Rate, parse_rate
from throttle.window import SlidingWindow

__all__ = ["Decision", "ManualClock", "MonotonicClock", "Rate", "RateLimiter", "SlidingWindow", "parse_rate"]
