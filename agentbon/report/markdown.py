"""``report.md``: the report's tables as GitHub-flavoured Markdown."""

from __future__ import annotations

from agentbon.report.schema import RunReport
from agentbon.report.tables import Table, all_tables


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(table: Table, level: int = 2) -> str:
    """One table with its title as a heading and its notes as a list under it."""
    lines = [f"{'#' * level} {table.title}", ""]
    lines.append("| " + " | ".join(_cell(h) for h in table.headers) + " |")
    lines.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(table.headers))) + "|")
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
    if table.notes:
        lines += ["", *(f"- {note}" for note in table.notes)]
    return "\n".join(lines) + "\n"


def render_markdown(s: RunReport) -> str:
    """The whole ``report.md``."""
    head = [
        f"# agentbon report — {s.run_id}",
        "",
        f"Model `{s.model or '?'}`, N = {s.n}, {s.tasks} tasks; "
        f"generated {s.generated_at}. Plots: `report.html`; every figure: `summary.json`.",
        "",
        "",
    ]
    return "\n".join(head) + "\n".join(md_table(t) for t in all_tables(s))
