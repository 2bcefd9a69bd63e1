"""Totals per project and per day, and a plain-text summary."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import date

from timesheet.durations import hours, split_by_day
from timesheet.entries import Entry
from timesheet.fmt import hhmm


def by_project(entries: Iterable[Entry]) -> dict[str, float]:
    """Hours per project, projects in alphabetical order."""
    totals: dict[str, float] = defaultdict(float)
    for entry in entries:
        totals[entry.project] += hours(entry)
    return dict(sorted(totals.items()))


def by_day(entries: Iterable[Entry]) -> dict[date, float]:
    """Hours per calendar day; an entry that crosses midnight counts on both days."""
    totals: dict[date, float] = defaultdict(float)
    for entry in entries:
        for day, part in split_by_day(entry):
            totals[day] += part
    return dict(sorted(totals.items()))


def render(entries: Iterable[Entry]) -> str:
    """A summary table: one line per project, then the total."""
    totals = by_project(entries)
    width = max([len(project) for project in totals] + [len("total")])
    lines = [f"{project:<{width}}  {hhmm(value):>6}" for project, value in totals.items()]
    lines.append(f"{'total':<{width}}  {hhmm(sum(totals.values())):>6}")
    return "\n".join(lines) + "\n"
