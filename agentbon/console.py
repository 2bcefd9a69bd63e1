"""The console agentbon prints to: a terminal's own width, or a wide one for logs.

A nightly batch's output goes to a file, where rich would assume 80 columns and squeeze every table (headers on
three lines, one interval per line, "selector" cut into "selecto / r"). Printed to something that is not a
terminal, and without ``COLUMNS`` set, tables get ``LOG_WIDTH`` columns instead: one row per line, as a reader
of a log (or ``grep``) expects. The live display stays for terminals (``progress.make_display``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from rich.console import Console

LOG_WIDTH = 200
"""Columns for output that is not a terminal: wide enough for every table of the report on one line per row."""


def make_console(**options: Any) -> Console:
    """A rich ``Console`` with ``options``; ``LOG_WIDTH`` wide when it does not write to a terminal."""
    console = Console(**options)
    if console.is_terminal or "width" in options or os.environ.get("COLUMNS"):
        return console
    return Console(width=LOG_WIDTH, **options)


def say(console: Console, text: str) -> None:
    """Print ``text`` as it is: no markup or highlighting read into it, not wrapped (paths and ids stay whole)."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def listed(items: Sequence[str], most: int) -> str:
    """The first ``most`` of ``items``, and how many more there are (``a, b and 3 more``)."""
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")
