"""Two runs side by side: the headline figures of each and the difference (B − A)."""

from __future__ import annotations

from agentbon.report.schema import Band, RunReport
from agentbon.report.tables import Table, gain, num, pct


def _at(block: Band, ks: list[int], k: int) -> float | None:
    """The value at k; None where the run did not measure it."""
    return block.mean[ks.index(k)] if k in ks else None


def _delta(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None else gain(b - a)


def _last(block: Band) -> float | None:
    return next((v for v in reversed(block.mean) if v is not None), None)


def compare_table(a: RunReport, b: RunReport) -> Table:
    """Headline metrics of run A and run B at every k either has, with B − A in points."""
    rows: list[list[str]] = [
        ["model", str(a.model), str(b.model), ""],
        ["tasks", str(a.tasks), str(b.tasks), f"{b.tasks - a.tasks:+d}"],
        ["N", str(a.n), str(b.n), ""],
    ]
    p1a, p1b = a.metrics.pass_at_1.mean, b.metrics.pass_at_1.mean
    rows.append(["pass@1", pct(p1a), pct(p1b), _delta(p1a, p1b)])
    ks = sorted(set(a.ks) | set(b.ks))
    for k in ks:
        ca, cb = _at(a.metrics.coverage, a.ks, k), _at(b.metrics.coverage, b.ks, k)
        rows.append([f"coverage@{k}", pct(ca), pct(cb), _delta(ca, cb)])
    for name in [s for s in a.selectors if s in b.selectors]:
        for k in ks:
            sa = _at(a.metrics.selectors[name].selected, a.ks, k)
            sb = _at(b.metrics.selectors[name].selected, b.ks, k)
            rows.append([f"selected@{k} ({name})", pct(sa), pct(sb), _delta(sa, sb)])
    pa, pb = a.primary_selector, b.primary_selector
    if pa and pb and pa != pb:
        la, lb = _last(a.metrics.selectors[pa].selected), _last(b.metrics.selectors[pb].selected)
        rows.append([f"selected at the largest measured k (primary: {pa} / {pb})", pct(la), pct(lb), _delta(la, lb)])
    rows.append(["winners resolved", str(a.resolved_instances), str(b.resolved_instances),
                 f"{b.resolved_instances - a.resolved_instances:+d}"])  # fmt: skip
    ua, ub = a.cost.unit, b.cost.unit
    rows.append(["total tokens", f"{a.cost.total_tokens:,}", f"{b.cost.total_tokens:,}", ""])
    rows.append(["cost per rollout", num(a.cost.sample_cost, ua), num(b.cost.sample_cost, ub), ""])
    rows.append(["critical path p50", f"{num(a.cost.critical_path_p50_s)} s", f"{num(b.cost.critical_path_p50_s)} s",
                 ""])  # fmt: skip
    common = {t.task_id for t in a.per_task} & {t.task_id for t in b.per_task}
    notes = [f"{len(common)} tasks in common (A has {a.tasks}, B has {b.tasks}); differences in points."]
    if len(common) < max(a.tasks, b.tasks):
        notes.append("⚠ The runs cover different tasks: their figures are not directly comparable.")
    for name, run in (("A", a), ("B", b)):
        if missing := run.metrics.tasks_without_sample:
            notes.append(f"⚠ {name}: {len(missing)} task(s) without a sample (infrastructure errors, or not run): its "
                         "figures are over the others; the per-task table lists them.")  # fmt: skip
    if not (all(a.metrics.measured) and all(b.metrics.measured)):
        notes.append("— where a run did not measure a k (some task has fewer samples): never clamped.")
    if ua != ub:
        notes.append(f"⚠ Costs are in different units (A: {ua}, B: {ub}).")
    return Table("compare", f"A = {a.run_id}   vs   B = {b.run_id}", ["", "A", "B", "B − A"], rows, notes)
