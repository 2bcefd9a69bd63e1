"""Totals per project and per day, and a plain-text summary."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import date

from timesheet.durations import hours, round_up, split_by_day
from timesheet.entries import Entry
from timesheet.fmt import hhmm


def by_project(entries: Iterable[Entry], step: float | None = None) -> dict[str, float]:
    """Hours per project, projects in alphabetical order; with ``step``, each entry is rounded up to it first."""
    totals: dict[str, float] = defaultdict(float)
    for entry in entries:
        length = hours(entry)
        totals[entry.project] += round_up(length, step) if step else length
    return dict(sorted(totals.items()))


def by_day(entries: Iterable[Entry]) -> dict[date, float]:
    """Hours per calendar day; an entry that crosses midnight counts on both days."""
    totals: dict[date, float] = defaultdict(float)
    for entry in entries:
        for day, part in split_by_day(entry):
            totals[day] += part
    return dict(sorted(totals.items()))


def render(entries: Iterable[Entry], step: float | None = None) -> str:
    """A summary table: one line per project, then the total (entries rounded up to ``step`` if given)."""
    totals = by_project(entries, step)
    width = max([len(project) for project in totals] + [len("total")])
    lines = [f"{project:<{width}}  {hhmm(value):>6}" for project, value in totals.items()]
    lines.append(f"{'total':<{width}}  {hhmm(sum(totals.values())):>6}")
    return "\n".join(lines) + "\n"
