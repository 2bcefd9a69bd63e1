"""How long entries last, in hours, in all and per calendar day."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from timesheet.entries import Entry


def hours(entry: Entry) -> float:
    """The length of ``entry`` in hours."""
    return (entry.end - entry.start).seconds / 3600


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
