"""Plain-text timesheets."""

from timesheet.durations import hours, split_by_day
from timesheet.entries import Entry, parse, parse_line
from timesheet.fmt import hhmm, parse_hhmm
from timesheet.report import by_day, by_project, render

__all__ = [
    "Entry",
    "by_day",
    "by_project",
    "hhmm",
    "hours",
    "parse",
    "parse_hhmm",
    "parse_line",
    "render",
    "split_by_day",
]
