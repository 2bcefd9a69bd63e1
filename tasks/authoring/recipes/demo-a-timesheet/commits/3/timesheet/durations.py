"""How long entries last, in hours, in all and per calendar day."""

from __future__ import annotations

import math
from datetime import date, datetime, time, timedelta

from timesheet.entries import Entry


def hours(entry: Entry) -> float:
    """The length of ``entry`` in hours."""
    return (entry.end - entry.start).seconds / 3600


def round_up(value: float, step: float) -> float:
    """``value`` rounded up to a multiple of ``step`` (``round_up(1.1, 0.25) == 1.25``)."""
    if step <= 0:
        raise ValueError("step must be positive")
    # round() first: 0.75 / 0.25 may come out as 3.0000000000000004 and must not become 4 steps.
    return math.ceil(round(value / step, 9)) * step


def split_by_day(entry: Entry) -> list[tuple[date, float]]:
    """The hours ``entry`` spends on each calendar day it touches, in order."""
    parts = []
    start = entry.start
    while start < entry.end:
        midnight = datetime.combine(start.date() + timedelta(days=1), time())
        stop = min(midnight, entry.end)
        parts.append((start.date(), hours(Entry(start, stop, entry.project))))
        start = stop
    return parts
