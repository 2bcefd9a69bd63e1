"""Reports re-rendered from the run store alone: terminal tables, ``summary.json``, ``report.md``, ``report.html``.

The orchestrator calls :func:`write_reports` at the end of a run; ``agentbon report RUN_DIR`` calls
it again at any time (nothing is re-run).
"""

from __future__ import annotations

from pathlib import Path

from agentbon.files import write_atomic
from agentbon.report.html import render_html
from agentbon.report.markdown import render_markdown
from agentbon.report.schema import RunReport, read_summary
from agentbon.report.summary import build_report, build_summary
from agentbon.store import RunStore

__all__ = [
    "RunReport",
    "build_report",
    "build_summary",
    "read_summary",
    "render_html",
    "render_markdown",
    "write_reports",
]


def write_reports(
    store: RunStore, summary: RunReport | None = None, out_dir: Path | None = None
) -> dict[str, Path]:
    """Write ``summary.json`` (the RunReport), ``report.md`` and ``report.html`` (into the run directory by default)."""
    summary = summary if summary is not None else build_report(store)
    out = Path(out_dir) if out_dir else store.path
    out.mkdir(parents=True, exist_ok=True)
    paths = {"summary": out / "summary.json", "markdown": out / "report.md", "html": out / "report.html"}
    # Written whole, so a reader never sees a half-written report.
    write_atomic(paths["summary"], summary.to_json())
    write_atomic(paths["markdown"], render_markdown(summary))
    write_atomic(paths["html"], render_html(summary))
    return paths
