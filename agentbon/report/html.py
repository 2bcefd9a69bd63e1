"""``report.html``: one self-contained page (inline CSS and SVG, no script, no network resource)."""

from __future__ import annotations

import math
from html import escape
from typing import cast

from agentbon.report.schema import RunReport
from agentbon.report.svg import COVERAGE_COLOR, ORACLE_COLOR, PALETTE, Series, bar_chart, heatmap, line_chart
from agentbon.report.tables import Table, all_tables, num

PASS_MAP_COLORS = {"P": "#2ca02c", "F": "#e45756", "U": "#f2b447", "I": "#8c8c8c", "G": "#5a5a5a", "C": "#9ecae9",
                   ".": "#ffffff"}  # fmt: skip
PASS_MAP_LEGEND = {"P": "pass", "F": "fail", "U": "no grade", "I": "infra error", "G": "grade infra error",
                   "C": "cancelled", ".": "no rollout"}  # fmt: skip
PASS_MAP_ROWS = 400
"""Tasks drawn in the pass map; the rest are counted under it."""

CSS = """
body { font-family: system-ui, sans-serif; margin: 24px auto; max-width: 1100px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f6f6f6; } ul.notes { font-size: 13px; color: #444; } .warn { color: #b00020; }
figure { margin: 12px 0; } figcaption { font-size: 12px; color: #555; } .external { background: #fbf8ef; }
"""


def _table(t: Table) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in t.headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in t.rows)
    notes = "".join(f'<li class="{"warn" if n.startswith("⚠") else ""}">{escape(n)}</li>' for n in t.notes)
    cls = ' class="external"' if t.key == "references" else ""
    return f'<h2 id="{t.key}">{escape(t.title)}</h2><table{cls}><tr>{head}</tr>{body}</table><ul class="notes">{notes}</ul>'


def _series(s: RunReport, xs: list[float], loss: bool = False, with_band: bool = True) -> list[Series]:
    """One series per curve over the measured ks only (``xs`` has one entry per measured k): coverage, each selector's
    selected@k and the oracle's, or with ``loss`` each selector's loss@k alone."""
    m = s.metrics
    idx = _measured(s)

    def _pts(values: list[float | None]) -> list[float]:
        return [100 * cast(float, values[i]) for i in idx]  # a measured k has a value

    out = []
    if not loss:
        c = m.coverage
        out.append(Series("coverage (pass@k)", xs, _pts(c.mean), COVERAGE_COLOR, _pts(c.lo), _pts(c.hi)))
    for i, name in enumerate(s.selectors):
        b = m.selectors[name].loss if loss else m.selectors[name].selected
        color = PALETTE[i % len(PALETTE)]
        lo, hi = (_pts(b.lo), _pts(b.hi)) if with_band else (None, None)
        out.append(Series(name, xs, _pts(b.mean), color, lo, hi))
    if not loss:
        for name in s.oracles:
            out.append(Series(f"{name} (oracle)", xs, _pts(m.oracle[name].selected.mean), ORACLE_COLOR, dashed=True))
    return out


def _measured(s: RunReport) -> list[int]:
    return [i for i, m in enumerate(s.metrics.measured) if m]


def charts(s: RunReport) -> list[tuple[str, str]]:
    """(caption, svg) for every plot of the report (curves over the measured ks)."""
    idx = _measured(s)
    ks = [s.ks[i] for i in idx]
    if not ks:
        return [_pass_map(s)]
    xs = [math.log2(k) for k in ks]
    ticks = [(math.log2(k), str(k)) for k in ks]
    conf = int(round(100 * s.metrics.confidence))
    out = [(
        f"Coverage and selected@k against k (log2 axis); shaded: {conf}% bootstrap bands over tasks. "
        "The oracle (dashed) picks with the grading tests.",
        line_chart("Coverage and selected@k", _series(s, xs), ticks, "k (samples per task)", "accuracy (points)"),
    )]  # fmt: skip
    if s.selectors:
        loss = [Series(x.name, x.xs, x.ys, x.color) for x in _series(s, xs, loss=True, with_band=False)]
        out.append(("Selection loss (coverage − selected) per k.",
                    bar_chart("Selection loss per k", [str(k) for k in ks], loss, "k", "points lost")))  # fmt: skip
    if len(ks) > 1:
        groups = [f"{a}→{b}" for a, b in zip(ks, ks[1:], strict=False)]
        steps = idx[1:]  # gain[i - 1] is the step into ks[i]; the measured ks are a prefix

        def _gains(values: list[float | None]) -> list[float]:
            return [100 * (values[i - 1] or 0.0) for i in steps]

        gains = [Series("coverage", [], _gains(s.scaling.coverage.gain), COVERAGE_COLOR)]
        gains += [Series(n, [], _gains(s.scaling.selectors[n].gain), PALETTE[i % len(PALETTE)])
                  for i, n in enumerate(s.selectors)]  # fmt: skip
        out.append(("Gain of each doubling of k, in points; below the dashed line a doubling buys under one point.",
                    bar_chart("Gain per doubling", groups, gains, "doubling", "points gained", ref=(1.0, "1 point"))))  # fmt: skip
    costs = [c for i in idx if (c := s.cost.cost_at_k[i]) is not None and c > 0]
    if len(costs) == len(idx):
        cx = [math.log2(c) for c in costs]
        cost_series = [Series(x.name, cx, x.ys, x.color, x.lo, x.hi) for x in _series(s, cx)[: 1 + len(s.selectors)]]
        cost_ticks = [(math.log2(c), num(c)) for c in costs]
        unit = s.cost.unit
        out.append((f"Points against cost ({unit}, log2 axis); each marker is one k.",
                    line_chart("Points against cost", cost_series, cost_ticks, f"cost ({unit})", "accuracy (points)")))  # fmt: skip
    reliability = _reliability(s)
    if reliability:
        out.append(reliability)
    staged = _frontier(s)
    if staged:
        out.append(staged)
    out.append(_pass_map(s))
    return out


def _frontier(s: RunReport) -> tuple[str, str] | None:
    """Selected accuracy against the evidence tests' container-seconds (log2 axis), one marker per policy."""
    policies = s.frontier.policies if s.frontier else []
    costed = sorted((p for p in policies if p.container_s > 0), key=lambda p: p.container_s)
    if len(costed) < 2:
        return None
    xs = [math.log2(p.container_s) for p in costed]
    series = [Series(p.policy, [x], [100 * p.accuracy], PALETTE[i % len(PALETTE)]) for i, (p, x) in
              enumerate(zip(costed, xs, strict=True))]  # fmt: skip
    # The dashed line is the frontier itself: each policy more accurate than every cheaper one.
    best, edge = -1.0, []
    for p, x in zip(costed, xs, strict=True):
        if p.accuracy > best:
            best = p.accuracy
            edge.append((x, 100 * p.accuracy))
    series.insert(0, Series("frontier", [x for x, _ in edge], [y for _, y in edge], ORACLE_COLOR, dashed=True))
    ticks = [(x, num(p.container_s)) for p, x in zip(costed, xs, strict=True)]
    caption = ("Staged verification replayed: selected accuracy against the evidence tests' container-seconds "
               "(log2 axis); to the left, the critic chose which candidates to test.")  # fmt: skip
    return caption, line_chart("Accuracy against verification cost", series, ticks, "container-seconds",
                               "selected (%)")  # fmt: skip


def _reliability(s: RunReport) -> tuple[str, str] | None:
    """The reliability diagram: per critic, pass rate against mean score in each score bin; the diagonal is a
    perfectly calibrated critic."""
    critics = s.calibration.critics
    if not critics:
        return None
    series = [Series("perfect", [0.0, 1.0], [0.0, 100.0], ORACLE_COLOR, dashed=True)]
    for i, c in enumerate(critics):
        series.append(Series(c.name, [b.mean_score for b in c.bins], [100 * b.pass_rate for b in c.bins],
                             PALETTE[i % len(PALETTE)]))  # fmt: skip
    ticks = [(x / 5, f"{x / 5:.1f}") for x in range(6)]
    caption = ("Reliability: the share of candidates whose grade passed against the critic's mean score, per score "
               "bin of 0.1 (bins without candidates left out); on the dashed diagonal a score is the pass rate.")  # fmt: skip
    chart = line_chart("Critic reliability", series, ticks, "critic score", "passing (%)", y_range=(0.0, 100.0))
    return caption, chart


def _pass_map(s: RunReport) -> tuple[str, str]:
    tasks = sorted(s.per_task, key=lambda t: (-t.correct, t.task_id))
    shown = [(t.task_id, t.cells) for t in tasks[:PASS_MAP_ROWS]]
    more = len(tasks) - len(shown)
    caption = "Task-by-rollout pass map (grade), tasks with most passes first." + (
        f" {more} more tasks not drawn." if more > 0 else ""
    )
    return caption, heatmap("Pass map", shown, PASS_MAP_COLORS, PASS_MAP_LEGEND)


def render_html(s: RunReport) -> str:
    """The whole ``report.html``."""
    tables = {t.key: t for t in all_tables(s)}
    figures = "".join(f"<figure>{svg}<figcaption>{escape(cap)}</figcaption></figure>" for cap, svg in charts(s))
    intro = (
        f"Model <code>{escape(str(s.model or '?'))}</code>, N = {s.n}, {s.tasks} tasks; "
        f"generated {escape(s.generated_at)}. Every figure is also in <code>summary.json</code>."
    )
    order = [k for k in ("headline", "flags", "budget", "scaling", "selectors") if k in tables]
    body = "".join(_table(tables[k]) for k in order) + f'<h2 id="plots">Plots</h2>{figures}'
    later = ("selected_by_k", "calibration", "frontier", "endings", "cost", "references")
    body += "".join(_table(tables[k]) for k in later if k in tables)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>agentbon report — {escape(s.run_id)}</title><style>{CSS}</style></head>"
        f"<body><h1>agentbon report — {escape(s.run_id)}</h1><p>{intro}</p>{body}</body></html>\n"
    )


def render_tables_html(title: str, tables: list[Table]) -> str:
    """A page of tables alone, in the report's style (``agentbon report --compare``'s ``compare.html``)."""
    body = "".join(_table(t) for t in tables)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head>"
        f"<body><h1>{escape(title)}</h1>{body}</body></html>\n"
    )
