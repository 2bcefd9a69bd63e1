"""Timesheet entries: ``2024-03-04 09:00 -> 2024-03-04 17:30 | acme | standup, review``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

TIME_FORMAT = "%Y-%m-%d %H:%M"


@dataclass(frozen=True)
class Entry:
    start: datetime
    end: datetime
    project: str
    note: str = ""


def parse_line(line: str) -> Entry:
    """One entry; ValueError saying what is wrong with it."""
    span, _, rest = line.partition("|")
    project, _, note = rest.partition("|")
    start_text, arrow, end_text = span.partition("->")
    if not arrow or not project.strip():
        raise ValueError("expected 'START -> END | project | note'")
    start = datetime.strptime(start_text.strip(), TIME_FORMAT)
    end = datetime.strptime(end_text.strip(), TIME_FORMAT)
    if end <= start:
        raise ValueError(f"entry does not end after it starts: {span.strip()}")
    return Entry(start, end, project.strip().lower(), note.strip())


def parse(text: str) -> list[Entry]:
    """Every entry of a timesheet, earliest first; blank lines and ``#`` comments are skipped."""
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            entries.append(parse_line(line))
        except ValueError as err:
            raise ValueError(f"line {number}: {err}") from None
    return sorted(entries, key=lambda entry: entry.start)
