"""Plain-text timesheets."""

from timesheet.entries import Entry, parse, parse_line
from timesheet.fmt import hhmm, parse_hhmm

__all__ = ["Entry", "hhmm", "parse", "parse_hhmm", "parse_line"]
