"""Show an eval report: a rich table on a terminal, plain tab-separated lines elsewhere (logs, pipes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from agentbon.console import listed, say

if TYPE_CHECKING:
    from agentbon.evaluate.report import EvalReport, InstanceResult

STYLE = {"resolved": "green", "unresolved": "red", "empty_patch": "yellow", "error": "magenta"}
SHOWN = 200
"""Instances listed one per row; beyond that, only the summary (the report file has them all)."""


def _flags(entry: InstanceResult) -> str:
    flags = []
    if entry.tampered:
        flags.append(f"tampered: {', '.join(entry.tampered[:3])}")
    kinds = dict.fromkeys(f.kind for f in entry.flags)
    flags += [kind for kind in kinds if not (kind == "tampered" and entry.tampered)]  # said above, with paths
    if entry.patch_applied is False:
        flags.append("patch did not apply")
    if entry.timed_out:
        flags.append("timed out")
    return "; ".join(flags)


def print_report(report: EvalReport, console: Console) -> None:
    """Per-instance rows (up to ``SHOWN``), the input errors and the harness-style counts."""
    instances = report.instances
    rows = sorted(instances.items(), key=lambda kv: (kv[1].outcome == "resolved", kv[0]))[:SHOWN]
    if console.is_terminal:
        table = Table(title=f"eval {report.run_id} ({report.model_name_or_path})")
        for column in ("instance", "outcome", "flags", "reason"):
            table.add_column(column, overflow="fold")
        for tid, e in rows:
            table.add_row(tid, f"[{STYLE[e.outcome]}]{e.outcome}[/]", _flags(e), e.reason[:160])
        console.print(table)
    else:
        for tid, e in rows:  # tab-separated as written (rich would expand the tabs): ``cut -f`` works on it
            console.file.write(f"{tid}\t{e.outcome}\t{_flags(e)}\t{e.reason[:160]}\n")
        console.file.flush()
    if len(instances) > SHOWN:
        say(console, f"... and {len(instances) - SHOWN} more instances (see eval_report.json)")
    for error in report.input_errors:
        say(console, f"input error: {error}")
    for kind, ids in report.flagged_ids.items():  # one line per flag kind, when any
        say(console, f"flagged {kind}: {len(ids)} instance{'s' * (len(ids) != 1)} ({listed(ids, 10)})")
    n = report.submitted_instances
    share = f" ({100 * report.resolved_instances / n:.1f}%)" if n else ""
    say(
        console,
        f"submitted {n}, completed {report.completed_instances}, resolved {report.resolved_instances}{share}, "
        f"unresolved {report.unresolved_instances}, empty patch {report.empty_patch_instances}, "
        f"errors {report.error_instances}, input errors {len(report.input_errors)}",
    )


def print_systems(result: Any, console: Console) -> None:
    """An ensemble's systems, one line per rollout index (its harness report's counts), and what is not in the run."""
    ensemble = result.ensemble
    for s in result.systems:
        r = s.report
        total = r.total_instances
        share = f" ({100 * r.resolved_instances / total:.1f}% of {total})" if total else ""
        sample = f" sample {s.sample}" if s.system.width > 1 else ""
        say(console, f"rollout {s.index}: {s.system.name}{sample}: resolved {r.resolved_instances}{share}, "
                      f"submitted {r.submitted_instances}, empty patch {r.empty_patch_instances}, errors "
                      f"{r.error_instances} ({s.path.relative_to(result.path)})")  # fmt: skip
    if ensemble.not_predicted:
        ids = ensemble.not_predicted
        say(console, f"not in the run: {len(ids)} task(s) of the suite no system predicted ({listed(ids, 10)})")
    unloaded = sorted({tid for per_system in ensemble.unloaded for tid in per_system})
    if unloaded:
        say(console, f"left out: predictions for {len(unloaded)} task(s) that did not load ({', '.join(unloaded[:10])})")
    n, tasks = ensemble.n, len(ensemble.slots)
    say(console, f"ensemble: {len(ensemble.systems)} system(s), N = {n} rollouts per task, {tasks} task(s)")
