"""The terminal summary: the report's tables as rich tables."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table as RichTable

from agentbon.console import make_console
from agentbon.report.schema import RunReport
from agentbon.report.tables import Table, all_tables


def rich_table(table: Table) -> RichTable:
    """One report table as a rich table, notes as its caption."""
    out = RichTable(title=table.title, box=box.SIMPLE_HEAVY, caption="\n".join(table.notes) or None,
                    caption_justify="left", title_justify="left")  # fmt: skip
    for i, header in enumerate(table.headers):
        out.add_column(header, justify="left" if i == 0 else "right", overflow="fold")
    for row in table.rows:
        out.add_row(*row)
    return out


def print_summary(
    summary: RunReport, console: Console | None = None, keys: tuple[str, ...] | None = None
) -> None:
    """Print the summary's tables (all, or those whose key is in ``keys``)."""
    console = console or make_console()
    for table in all_tables(summary):
        if keys is None or table.key in keys:
            console.print(rich_table(table))
